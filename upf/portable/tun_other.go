//go:build !linux

package portable

import (
	"errors"
	"net/netip"
	"os"
)

func openTUN(name string) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

func setupLink(name string, mtu int, pool netip.Prefix) error {
	return errors.ErrUnsupported
}
