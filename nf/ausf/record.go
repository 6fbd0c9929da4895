package ausf

// Records: the AUSF's state as versioned values that another instance can
// be rebuilt from (issue 36, "state that can move"; the AMF's and SMF's
// are in nf/amf/record.go and nf/smf/record.go).
//
// # What is recorded
//
// The AUSF keeps one thing per UE: the authentication context of a 5G-AKA
// run (TS 33.501 §6.1.3.2 step 5), from Nausf_UEAuthentication_Authenticate
// to its expiry. A ContextRecord holds it whole: the authCtxId, the SUPI,
// the serving network name, XRES* and KSEAF, the deadline, and once
// confirmed the outcome and the RES* the confirmation carried (a repeated
// confirmation gets the same answer, see Confirm5gAka). A registration
// whose unit dies between Authentication Request and Response thus goes
// on at a restored AUSF: the AMF's 5g-aka-confirmation names a context
// the AUSF knows.
//
// What is not recorded: the configuration (a restored AUSF has its own,
// and its own NF instance ID, which only names it in the UDM's
// authentication events), the sweep's schedule (a restored AUSF sweeps at
// its first authentication) and plumbing. record_test.go's table lists
// every field of the AUSF's context with its place in the record or the
// reason it has none.
//
// # Versions
//
// A context changes twice: it is created (Authenticate) and confirmed
// (Confirm5gAka), and then ends when the sweep finds it expired. With a
// Recorder set (SetRecorder) each change goes to it synchronously, under
// the AUSF's lock (so in the order of the changes), before the request
// that made it is answered: a context's record is in the replica before
// the AMF can send its RAND to the UE (output commit). The end goes to
// the Recorder as EndedContext. Records are encoded with package sbi/wire;
// its layout hash versions ContextRecord, so a process built with another
// record type refuses one (wire.ErrLayoutMismatch). Times are UTC and
// byte slices copies: two captures of one context encode to the same
// bytes.
//
// # Restore
//
// Restore fills a fresh AUSF (New, then Restore, before it serves) with
// contexts, checked first: a record that could not have come from an AUSF
// is refused with ErrBadRecord and nothing is restored. Expired contexts
// are restored too (a confirmation finds them expired, as it would have
// at the dead AUSF) and go with the first sweep, which tells the Recorder.
// authCtxIds are 128-bit random values: a restored AUSF hands out no
// restored one again without a counter to raise.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tern5g/tern/security/kdf"
)

// Recorder receives the AUSF's changes to its authentication contexts.
// It is called under the AUSF's lock: it must not call the AUSF.
type Recorder interface {
	// RecordedContext is a context created or confirmed; the record is
	// the Recorder's.
	RecordedContext(r *ContextRecord)
	// EndedContext is a context gone (expired and swept).
	EndedContext(authCtxID string)
}

// ContextRecord is one authentication context (TS 33.501 §6.1.3.2).
type ContextRecord struct {
	ID                 string // authCtxId (TS 29.509 §6.1.3.2.2), 32 hex digits
	SUPI               string
	ServingNetworkName string
	XRESStar           []byte // 16 octets
	KSEAF              []byte // 32 octets
	Expires            time.Time
	// Result is the confirmation's outcome: 0 not confirmed yet,
	// 1 success, 2 failure; ResStar is the RES* the confirmation carried,
	// as the AMF sent it (hex).
	Result  uint8
	ResStar string
}

// ErrBadRecord refuses a record that no AUSF could have written.
var ErrBadRecord = errors.New("ausf: bad record")

// SetRecorder sets the Recorder of the AUSF's changes (nil: none). Set it
// before the AUSF serves.
func (a *AUSF) SetRecorder(r Recorder) {
	a.mu.Lock()
	a.rec = r
	a.mu.Unlock()
}

// recordLocked gives the Recorder the record of ctx id. Caller holds a.mu.
func (a *AUSF) recordLocked(id string, c *authContext) {
	if a.rec != nil {
		a.rec.RecordedContext(c.record(id))
	}
}

func (c *authContext) record(id string) *ContextRecord {
	return &ContextRecord{
		ID:                 id,
		SUPI:               c.supi,
		ServingNetworkName: c.snn,
		XRESStar:           bytes.Clone(c.xresStar),
		KSEAF:              bytes.Clone(c.kseaf),
		Expires:            c.expires.UTC().Round(0),
		Result:             c.result,
		ResStar:            c.resStar,
	}
}

// Records returns the records of every context the AUSF holds, by ID.
func (a *AUSF) Records() []ContextRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ContextRecord, 0, len(a.ctxs))
	for _, id := range slices.Sorted(maps.Keys(a.ctxs)) {
		out = append(out, *a.ctxs[id].record(id))
	}
	return out
}

// Restore fills a fresh AUSF with recs. It refuses, changing nothing, an
// AUSF that holds contexts already and a record that no AUSF could have
// written (ErrBadRecord).
func (a *AUSF) Restore(recs []ContextRecord) error {
	ctxs := make(map[string]*authContext, len(recs))
	for i := range recs {
		r := &recs[i]
		if err := r.check(); err != nil {
			return fmt.Errorf("%w: context %q: %v", ErrBadRecord, r.ID, err)
		}
		if _, dup := ctxs[r.ID]; dup {
			return fmt.Errorf("%w: context %q twice", ErrBadRecord, r.ID)
		}
		ctxs[r.ID] = &authContext{
			supi:     r.SUPI,
			snn:      r.ServingNetworkName,
			xresStar: bytes.Clone(r.XRESStar),
			kseaf:    bytes.Clone(r.KSEAF),
			expires:  r.Expires,
			result:   r.Result,
			resStar:  r.ResStar,
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ctxs) > 0 {
		return errors.New("ausf: restore into an AUSF that holds contexts")
	}
	a.ctxs = ctxs
	a.nextSweep = time.Time{}
	return nil
}

func (r *ContextRecord) check() error {
	if b, err := hex.DecodeString(r.ID); err != nil || len(b) != 16 {
		return errors.New("authCtxId: want 32 hex digits")
	}
	switch {
	case r.SUPI == "":
		return errors.New("no SUPI")
	case kdf.ValidateSNN(r.ServingNetworkName) != nil:
		// Only its form: the restoring AUSF's serving PLMNs may differ
		// from those of the AUSF that accepted it.
		return fmt.Errorf("serving network name %q", r.ServingNetworkName)
	case len(r.XRESStar) != 16:
		return fmt.Errorf("XRES* of %d octets", len(r.XRESStar))
	case len(r.KSEAF) != 32:
		return fmt.Errorf("KSEAF of %d octets", len(r.KSEAF))
	case r.Expires.IsZero():
		return errors.New("no deadline")
	case r.Result > resultFailure:
		return fmt.Errorf("result %d", r.Result)
	case r.Result == resultNone && r.ResStar != "":
		return errors.New("a RES* without a result")
	}
	return nil
}
