package udm

// Records: the UDM's per-UE state as versioned values that another
// instance can be rebuilt from (issue 36, "state that can move"; the
// AMF's and SMF's are in nf/amf/record.go and nf/smf/record.go).
//
// # What is recorded
//
// The subscription data is the UDR's (in the subscriber store, which
// outlives a unit). What the UDM keeps in memory per UE is a UERecord: the
// serving AMF's registration for 3GPP access (Nudm_UECM, TS 29.503
// §5.3.2.2.2, with its deregistration callback and GUAMI) and the last
// authentication result the AUSF reported (TS 33.501 §6.1.4.1a). Without
// the registration, a restored UDM would answer the serving AMF's
// deregistration (its PATCH with purgeFlag) with 404, pick the serving
// PLMN of an SDM read from the SUPI instead of the AMF's GUAMI, and tell
// no AMF of a subscription withdrawn or changed (SubscriberChanged).
//
// The UDM has no SDM subscriptions of its own: the AMF and SMF it
// notifies are the unit's (SetAMF, SetSMF), wired again in the new unit.
// Also not recorded: configuration (home network keys, the RAND source)
// and plumbing. record_test.go's table lists every field of the UDM with
// its place in the record or the reason it has none.
//
// # Versions
//
// With a Recorder set (SetRecorder), every change of a UE's registration
// or authentication result hands the Recorder the UE's whole record,
// under the UDM's lock (so in the order of the changes), before the
// request that made it is answered; a UE with neither left gives a record
// with neither (Empty), its last. Records are encoded with package
// sbi/wire, whose layout hash versions UERecord; times are UTC. The models
// carry one map (EpsInterworkingInfo.EpsIwkPgws, which tern sets only
// from an AMF's PATCH): a record holding one with several entries may
// encode its entries in another order from one capture to the next.
//
// # Restore
//
// Restore fills a fresh UDM (New, then Restore, before it serves); every
// record is checked first (the checks the requests that write it make)
// and a record no UDM could have written refuses the whole restore with
// ErrBadRecord.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// Recorder receives the record of every UE whose state at the UDM
// changed. It is called under the UDM's lock: it must not call the UDM.
type Recorder interface {
	RecordedUE(r *UERecord)
}

// UERecord is what the UDM holds of one UE besides its subscription.
type UERecord struct {
	SUPI string
	// AMF3GPP is the serving AMF's registration for 3GPP access.
	AMF3GPP *models.Udm_UECM_Amf3GppAccessRegistration
	// AuthEvent is the last authentication result.
	AuthEvent *models.Udm_UEAU_AuthEvent
}

// Empty says the UE left the UDM's memory: the record is its last.
func (r *UERecord) Empty() bool { return r.AMF3GPP == nil && r.AuthEvent == nil }

// ErrBadRecord refuses a record that no UDM could have written.
var ErrBadRecord = errors.New("udm: bad record")

// SetRecorder sets the Recorder of the UDM's changes (nil: none). Set it
// before the UDM serves.
func (u *UDM) SetRecorder(r Recorder) {
	u.mu.Lock()
	u.rec = r
	u.mu.Unlock()
}

// recordLocked gives the Recorder supi's record. Caller holds u.mu.
func (u *UDM) recordLocked(supi string) {
	if u.rec != nil {
		u.rec.RecordedUE(u.recordOf(supi))
	}
}

// recordOf builds supi's record from copies. Caller holds u.mu.
func (u *UDM) recordOf(supi string) *UERecord {
	r := &UERecord{SUPI: supi}
	if reg := u.amf3GPP[supi]; reg != nil {
		c := *reg
		c.RegistrationTime = utcPtr(c.RegistrationTime)
		c.BackupAmfInfo = slices.Clone(c.BackupAmfInfo)
		if c.Guami != nil {
			g := *c.Guami
			if g.PlmnId != nil {
				p := *g.PlmnId
				g.PlmnId = &p
			}
			c.Guami = &g
		}
		if c.EpsInterworkingInfo != nil {
			e := *c.EpsInterworkingInfo
			e.EpsIwkPgws = maps.Clone(e.EpsIwkPgws)
			c.EpsInterworkingInfo = &e
		}
		r.AMF3GPP = &c
	}
	if ev := u.authEvents[supi]; ev != nil {
		c := *ev
		c.TimeStamp = utcPtr(c.TimeStamp)
		r.AuthEvent = &c
	}
	return r
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Round(0)
	return &u
}

// Records returns the record of every UE the UDM holds state for, by SUPI.
func (u *UDM) Records() []UERecord {
	u.mu.Lock()
	defer u.mu.Unlock()
	supis := slices.Collect(maps.Keys(u.amf3GPP))
	for s := range u.authEvents {
		if u.amf3GPP[s] == nil {
			supis = append(supis, s)
		}
	}
	slices.Sort(supis)
	out := make([]UERecord, 0, len(supis))
	for _, s := range supis {
		out = append(out, *u.recordOf(s))
	}
	return out
}

// Restore fills a fresh UDM with recs. It refuses, changing nothing, a UDM
// that holds UE state already and a record that no UDM could have written
// (ErrBadRecord).
func (u *UDM) Restore(recs []UERecord) error {
	regs := make(map[string]*models.Udm_UECM_Amf3GppAccessRegistration, len(recs))
	events := make(map[string]*models.Udm_UEAU_AuthEvent, len(recs))
	seen := make(map[string]bool, len(recs))
	for i := range recs {
		r := &recs[i]
		if err := r.check(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadRecord, r.SUPI, err)
		}
		if seen[r.SUPI] {
			return fmt.Errorf("%w: %s twice", ErrBadRecord, r.SUPI)
		}
		seen[r.SUPI] = true
		if r.AMF3GPP != nil {
			c := *r.AMF3GPP
			regs[r.SUPI] = &c
		}
		if r.AuthEvent != nil {
			c := *r.AuthEvent
			events[r.SUPI] = &c
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.amf3GPP) > 0 || len(u.authEvents) > 0 {
		return errors.New("udm: restore into a UDM that holds UE state")
	}
	u.amf3GPP, u.authEvents = regs, events
	return nil
}

// check refuses what the UDM's requests would not have stored.
func (r *UERecord) check() error {
	if err := checkSUPI("{supi}", r.SUPI); err != nil {
		return err
	}
	if r.Empty() {
		return errors.New("neither a registration nor an authentication result")
	}
	if reg := r.AMF3GPP; reg != nil {
		if err := sbi.CheckAmf3GppAccessRegistration(reg); err != nil {
			return fmt.Errorf("registration: %v", err)
		}
		if reg.Supi != r.SUPI || reg.RegistrationTime == nil {
			return errors.New("registration: not one RegisterAMF3GPPAccess stored")
		}
	}
	if ev := r.AuthEvent; ev != nil {
		if ev.NfInstanceId == "" || ev.TimeStamp == nil || ev.AuthType == "" || ev.ServingNetworkName == "" || ev.AuthRemovalInd {
			return errors.New("authentication result: not one ConfirmAuth stored")
		}
	}
	return nil
}
