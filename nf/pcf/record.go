package pcf

// Records: the PCF's state as versioned values that another instance can
// be rebuilt from (issue 36, "state that can move"; the AMF's and SMF's
// are in nf/amf/record.go and nf/smf/record.go).
//
// # What is recorded
//
// The PCF keeps one thing per PDU session: its SM policy association
// (TS 29.512 §4.2.2), from Npcf_SMPolicyControl_Create to its Delete. A
// PolicyRecord holds it whole: the association's ID, the session it is for
// (SUPI, PDU session ID, DNN, S-NSSAI), the SMF's notification URI, and
// the decision in force, as the values the PCF authorised (session AMBR,
// default 5QI and ARP, TS 29.512 §4.2.2.4): the decision itself (session
// rule, PCC rule, QoS data) is built from them (decision), and holds maps,
// which would encode in iteration order. A session established before a
// unit died is then released, or has its policy changed, at the restored
// PCF as at the dead one (the SMF's record names the association).
//
// tern's PCF has no AM policy associations (Npcf_AMPolicyControl): the
// AMF does not ask for one, so there is nothing else per UE.
//
// What is not recorded: the configuration (local policy per DNN and the
// defaults: a restored PCF has its own), the SMF it notifies (set by
// SetNotifier), the counters of Stats, and the index by session (rebuilt).
// record_test.go's table lists every field of the association with its
// place in the record or the reason it has none.
//
// # Versions
//
// An association changes when it is created (or replaced by a new one for
// the same session), when its decision changes (an SMF's update with a
// changed subscription, UpdatePolicy) and when it is deleted. With a
// Recorder set (SetRecorder) each change goes to it synchronously under
// the PCF's lock, in the order of the changes, before the request that
// made it is answered and before UpdatePolicy notifies the SMF (output
// commit). Records are encoded with package sbi/wire, whose layout hash
// versions PolicyRecord; they hold no maps, so two captures of one
// association encode to the same bytes.
//
// # Restore
//
// Restore fills a fresh PCF (New, then Restore, before it serves); every
// record is checked first and a record no PCF could have written refuses
// the whole restore with ErrBadRecord. Association IDs are a counter: a
// restored PCF hands out IDs past every restored one. An ID whose
// association was deleted before the unit died, above every live one, may
// be handed out again; no live reference names it (the SMF's record of a
// session clears its policy ID when the association is deleted).

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/free5gc/openapi/models"
)

// Recorder receives the PCF's changes to its SM policy associations. It
// is called under the PCF's lock: it must not call the PCF.
type Recorder interface {
	// RecordedPolicy is an association created or changed; the record is
	// the Recorder's.
	RecordedPolicy(r *PolicyRecord)
	// DeletedPolicy is an association gone (deleted, or replaced by a new
	// association for its session).
	DeletedPolicy(id string)
}

// PolicyRecord is one SM policy association (TS 29.512 §4.2.2).
type PolicyRecord struct {
	ID           string // the association's ID, as in its resource URI
	SUPI         string
	PDUSessionID int32
	DNN          string
	SNSSAI       *models.Snssai
	NotifyURI    string // the SMF's notificationUri
	// The decision in force: the session rule's authorised session AMBR
	// and default QoS (5QI, ARP).
	SessionAMBR models.Ambr
	FiveQI      int32
	ARP         models.Arp
}

// ErrBadRecord refuses a record that no PCF could have written.
var ErrBadRecord = errors.New("pcf: bad record")

// SetRecorder sets the Recorder of the PCF's changes (nil: none). Set it
// before the PCF serves.
func (p *PCF) SetRecorder(r Recorder) {
	p.mu.Lock()
	p.rec = r
	p.mu.Unlock()
}

// recordLocked gives the Recorder pol's record. Caller holds p.mu.
func (p *PCF) recordLocked(pol *policy) {
	if p.rec != nil {
		p.rec.RecordedPolicy(pol.record())
	}
}

func (pol *policy) record() *PolicyRecord {
	r := &PolicyRecord{
		ID:           pol.id,
		SUPI:         pol.supi,
		PDUSessionID: pol.psi,
		DNN:          pol.dnn,
		NotifyURI:    pol.notifyURI,
	}
	if pol.slice != nil {
		s := *pol.slice
		r.SNSSAI = &s
	}
	if sr := pol.decision.SessRules[SessRuleID]; sr != nil {
		if sr.AuthSessAmbr != nil {
			r.SessionAMBR = *sr.AuthSessAmbr
		}
		if q := sr.AuthDefQos; q != nil {
			r.FiveQI = q.Var5qi
			if q.Arp != nil {
				r.ARP = *q.Arp
			}
		}
	}
	return r
}

// Records returns the records of every association the PCF holds, by ID.
func (p *PCF) Records() []PolicyRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PolicyRecord, 0, len(p.policies))
	for _, pol := range p.policies {
		out = append(out, *pol.record())
	}
	slices.SortFunc(out, func(a, b PolicyRecord) int {
		x, _ := strconv.ParseUint(a.ID, 10, 64)
		y, _ := strconv.ParseUint(b.ID, 10, 64)
		return cmp.Compare(x, y)
	})
	return out
}

// Restore fills a fresh PCF with recs. It refuses, changing nothing, a PCF
// that holds associations already and a record that no PCF could have
// written (ErrBadRecord).
func (p *PCF) Restore(recs []PolicyRecord) error {
	policies := make(map[string]*policy, len(recs))
	bySession := make(map[sessionKey]string, len(recs))
	var last uint64
	for i := range recs {
		r := &recs[i]
		n, err := r.check()
		if err != nil {
			return fmt.Errorf("%w: association %q: %v", ErrBadRecord, r.ID, err)
		}
		key := sessionKey{r.SUPI, r.PDUSessionID}
		if _, dup := policies[r.ID]; dup {
			return fmt.Errorf("%w: association %q twice", ErrBadRecord, r.ID)
		}
		if other, dup := bySession[key]; dup {
			return fmt.Errorf("%w: associations %q and %q for one session", ErrBadRecord, other, r.ID)
		}
		pol := &policy{
			id:        r.ID,
			supi:      r.SUPI,
			psi:       r.PDUSessionID,
			dnn:       r.DNN,
			decision:  decision(r.SessionAMBR, r.FiveQI, r.ARP),
			notifyURI: r.NotifyURI,
		}
		if r.SNSSAI != nil {
			s := *r.SNSSAI
			pol.slice = &s
		}
		policies[r.ID], bySession[key] = pol, r.ID
		last = max(last, n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.policies) > 0 {
		return errors.New("pcf: restore into a PCF that holds associations")
	}
	p.policies, p.bySession = policies, bySession
	if p.nextID.Load() < last {
		p.nextID.Store(last)
	}
	return nil
}

// check refuses what CreateSMPolicy would not have stored; it returns the
// ID's number.
func (r *PolicyRecord) check() (uint64, error) {
	n, err := strconv.ParseUint(r.ID, 10, 64)
	switch {
	case err != nil || n == 0 || strconv.FormatUint(n, 10) != r.ID:
		return 0, errors.New("the ID is not one the PCF hands out")
	case r.SUPI == "":
		return 0, errors.New("no SUPI")
	case r.PDUSessionID < 1 || r.PDUSessionID > 15:
		return 0, fmt.Errorf("PDU session ID %d", r.PDUSessionID)
	case r.DNN == "":
		return 0, errors.New("no DNN")
	case r.NotifyURI == "":
		return 0, errors.New("no notification URI")
	case !validBitRate(r.SessionAMBR.Uplink) || !validBitRate(r.SessionAMBR.Downlink):
		return 0, fmt.Errorf("session AMBR %+v", r.SessionAMBR)
	case r.FiveQI < 1 || r.FiveQI > 255 || r.ARP.PriorityLevel < 1 || r.ARP.PriorityLevel > 15:
		return 0, fmt.Errorf("5QI %d, ARP priority %d", r.FiveQI, r.ARP.PriorityLevel)
	}
	return n, nil
}
