package store

import (
	"fmt"
	"strings"
)

// ImportAll stores subs in one transaction: all of them or, on any error,
// none. With replace, subscribers the store already has are overwritten
// (their SQN_HE becomes the imported SQN); without it, if any SUPI is
// already stored nothing is written and the error is an *ExistError naming
// every such SUPI. It returns how many subscribers were written.
//
// This is the bulk provisioning of `tern subscriber import --csv`: an
// operator who imports a file wants to know it went in whole, and an IMSI
// already provisioned is more often a mistake in the file than an update.
func (s *Store) ImportAll(subs []Subscriber, replace bool) (int, error) {
	mode := failOnExisting
	if replace {
		mode = replaceExisting
	}
	return s.writeAll(subs, mode)
}

// ExistError is ImportAll's answer when subscribers to be imported are
// already in the store; nothing was written.
type ExistError struct {
	SUPIs []string // in the order they were given
}

func (e *ExistError) Error() string {
	const show = 5
	names := e.SUPIs
	more := ""
	if len(names) > show {
		more = fmt.Sprintf(" and %d more", len(names)-show)
		names = names[:show]
	}
	return fmt.Sprintf("store: %d subscribers already stored (%s%s)", len(e.SUPIs), strings.Join(names, ", "), more)
}
