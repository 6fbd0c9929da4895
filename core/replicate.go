package core

// Replication of the unit's state (issue 36, docs/resiliency.md): in a
// replicated mode the records of the unit's NFs go, step by step, to a
// RecordStore that a standby unit restores from when this one dies.
//
// What the store holds, by kind: the AMF's UE records by context ID, the
// SMF's UE records by SUPI (a UE without sessions left is deleted), UPF
// records by name and where its allocators stand (so that a restored SMF
// continues them exactly and hands out no ref, CP F-SEID or UE address
// again), the AUSF's authentication contexts by authCtxId (so
// that a registration between Authentication Request and Response goes
// on), the PCF's SM policy associations by ID (so that a restored
// session's policy can be updated and deleted), the UDM's registrations
// of the serving AMF and last authentication results by SUPI (so that a
// restored UE's deregistration finds its registration), and one unit
// record with what a restored unit must advertise as
// before (the SMF's PFCP Recovery Time Stamp, so that its UPFs keep their
// association, TS 29.244 §6.2.6.2.2). The NRF's registrations are the
// unit's own (a standby registers its NFs when it starts) and the UDR's
// data is in the subscriber store, which the units share.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/ausf"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/nf/udm"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sctp"
)

// RecordStore keeps the latest record of each key. Put returns once the
// record is committed (a standby that reads the store after this process
// died sees it): the NFs call it at the end of each step, before the
// step's messages leave (output commit).
type RecordStore interface {
	Put(kind uint8, key, rec []byte) error
	Delete(kind uint8, key []byte) error
}

// The kinds of record a unit stores.
const (
	KindUnit   uint8 = 1 // unitRecord, key "unit"
	KindAMFUE  uint8 = 2 // amf.UERecord, key its ID (8 bytes, big endian)
	KindSMFUE  uint8 = 3 // smf.UERecord, key its SUPI
	KindSMFUPF uint8 = 4 // smf.UPFRecord, key the UPF's name
	KindAUSF   uint8 = 5 // ausf.ContextRecord, key its authCtxId
	KindPCF    uint8 = 6 // pcf.PolicyRecord, key its association ID
	KindUDM    uint8 = 7 // udm.UERecord, key its SUPI
	// KindSMFAlloc is the SMF's smf.AllocatorRecord, key "smf": where its
	// SM context refs, CP F-SEIDs and UE address pools stand.
	KindSMFAlloc uint8 = 8
)

var (
	unitKey     = []byte("unit")
	smfAllocKey = []byte("smf")
)

// unitRecord is what a restored unit must say as the one before it did.
type unitRecord struct {
	SMFRecoveryTime time.Time
}

// UnitState is a unit's state as its record store held it: what a standby
// restores.
type UnitState struct {
	AMF  []amf.UERecord
	SMF  smf.Checkpoint
	AUSF []ausf.ContextRecord
	PCF  []pcf.PolicyRecord
	UDM  []udm.UERecord
	// Refused counts records that did not decode (corrupted, or written
	// by a build with other record types): their UEs are not restored.
	Refused int
	// Raw is every record as stored, for the new unit's own store.
	Raw []RawRecord
}

// RawRecord is one stored record.
type RawRecord struct {
	Kind     uint8
	Key, Rec []byte
}

// Add decodes one stored record into s (the standby calls it for each
// record its store yields). A record that does not decode is counted in
// Refused and left out; Add fails only for a kind it does not know.
func (s *UnitState) Add(kind uint8, key, rec []byte) error {
	var err error
	switch kind {
	case KindUnit:
		var u unitRecord
		if err = wire.Decode(rec, &u); err == nil {
			s.SMF.RecoveryTime = u.SMFRecoveryTime
		}
	case KindAMFUE:
		var r amf.UERecord
		if err = wire.Decode(rec, &r); err == nil {
			s.AMF = append(s.AMF, r)
		}
	case KindSMFUE:
		var r smf.UERecord
		if err = wire.Decode(rec, &r); err == nil {
			s.SMF.UEs = append(s.SMF.UEs, r)
		}
	case KindSMFUPF:
		var r smf.UPFRecord
		if err = wire.Decode(rec, &r); err == nil {
			s.SMF.UPFs = append(s.SMF.UPFs, r)
		}
	case KindSMFAlloc:
		var r smf.AllocatorRecord
		if err = wire.Decode(rec, &r); err == nil {
			s.SMF.NextRef, s.SMF.NextSEID, s.SMF.Pools = r.NextRef, r.NextSEID, r.Pools
		}
	case KindAUSF:
		var r ausf.ContextRecord
		if err = wire.Decode(rec, &r); err == nil {
			s.AUSF = append(s.AUSF, r)
		}
	case KindPCF:
		var r pcf.PolicyRecord
		if err = wire.Decode(rec, &r); err == nil {
			s.PCF = append(s.PCF, r)
		}
	case KindUDM:
		var r udm.UERecord
		if err = wire.Decode(rec, &r); err == nil {
			s.UDM = append(s.UDM, r)
		}
	default:
		return fmt.Errorf("core: record of unknown kind %d", kind)
	}
	if err != nil {
		s.Refused++
		return nil
	}
	s.Raw = append(s.Raw, RawRecord{Kind: kind, Key: append([]byte(nil), key...), Rec: append([]byte(nil), rec...)})
	return nil
}

// recorder takes the unit's records to a RecordStore.
type recorder struct {
	store   RecordStore
	failed  atomic.Uint64 // records the store refused
	onFail  func(error)
	stopped atomic.Bool // StopRecording: nothing more goes to the store
}

func (r *recorder) put(kind uint8, key []byte, v any) {
	if r.stopped.Load() {
		return
	}
	b, err := wire.Append(nil, v)
	if err == nil {
		err = r.store.Put(kind, key, b)
	}
	if err != nil {
		r.fail(err)
	}
}

// putEncoded stores a record encoded already.
func (r *recorder) putEncoded(kind uint8, key, rec []byte) {
	if r.stopped.Load() {
		return
	}
	if err := r.store.Put(kind, key, rec); err != nil {
		r.fail(err)
	}
}

func (r *recorder) del(kind uint8, key []byte) {
	if r.stopped.Load() {
		return
	}
	if err := r.store.Delete(kind, key); err != nil {
		r.fail(err)
	}
}

func (r *recorder) fail(err error) {
	r.failed.Add(1)
	if r.onFail != nil {
		r.onFail(err)
	}
}

// UERecord is the AMF's RecordSink: enc, the encoding the AMF made to
// see the change, is what goes into the store (no second encoding).
func (r *recorder) UERecord(rec *amf.UERecord, enc []byte) {
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], rec.ID)
	if rec.Gone() {
		r.del(KindAMFUE, key[:])
		return
	}
	r.putEncoded(KindAMFUE, key[:], enc)
}

// RecordedUE is the SMF's Recorder for UEs: one without sessions left
// the SMF.
func (r *recorder) RecordedUE(rec *smf.UERecord) {
	if len(rec.Sessions) == 0 {
		r.del(KindSMFUE, []byte(rec.SUPI))
		return
	}
	r.put(KindSMFUE, []byte(rec.SUPI), rec)
}

// RecordedUPF is the SMF's Recorder for UPFs.
func (r *recorder) RecordedUPF(rec *smf.UPFRecord) {
	r.put(KindSMFUPF, []byte(rec.Name), rec)
}

// RecordedAllocators is the SMF's Recorder for its allocators.
func (r *recorder) RecordedAllocators(rec *smf.AllocatorRecord) {
	r.put(KindSMFAlloc, smfAllocKey, rec)
}

// RecordedContext is the AUSF's Recorder for a context created or
// confirmed.
func (r *recorder) RecordedContext(rec *ausf.ContextRecord) {
	r.put(KindAUSF, []byte(rec.ID), rec)
}

// EndedContext is the AUSF's Recorder for a context gone.
func (r *recorder) EndedContext(id string) {
	r.del(KindAUSF, []byte(id))
}

// RecordedPolicy is the PCF's Recorder for an association created or
// changed.
func (r *recorder) RecordedPolicy(rec *pcf.PolicyRecord) {
	r.put(KindPCF, []byte(rec.ID), rec)
}

// DeletedPolicy is the PCF's Recorder for an association gone.
func (r *recorder) DeletedPolicy(id string) {
	r.del(KindPCF, []byte(id))
}

// RecordedUE is the UDM's Recorder: a UE with neither a registration nor
// an authentication result left the UDM.
func (r udmRecorder) RecordedUE(rec *udm.UERecord) {
	if rec.Empty() {
		r.del(KindUDM, []byte(rec.SUPI))
		return
	}
	r.put(KindUDM, []byte(rec.SUPI), rec)
}

// udmRecorder is the recorder as the UDM's Recorder, whose method name
// the SMF's Recorder uses too.
type udmRecorder struct{ *recorder }

// putUnit stores the unit record.
func (c *Core) putUnit() {
	c.rec.put(KindUnit, unitKey, &unitRecord{SMFRecoveryTime: c.SMF.RecoveryTime().UTC()})
}

// RecordsRefused counts the records the unit's RecordStore refused: each
// is a step whose state a standby would not have. Zero outside a
// replicated unit.
func (c *Core) RecordsRefused() uint64 {
	if c.rec == nil {
		return 0
	}
	return c.rec.failed.Load()
}

// Takeover makes this standby unit (built with WithUnit, Standby) the
// active one from st, the state of the unit that died: the NFs the AMF
// and SMF call (the UDM, the AUSF, the PCF), then the SMF and then the AMF are restored, the records go into this unit's own store (so
// that its own standby has them all, not only those changed from now on),
// N4 is bound with the restored PFCP Recovery Time Stamp and the unit
// starts. The gNB associations come afterwards through the N2 front end
// (ResumeN2). A takeover that fails leaves a unit that must not serve.
func (c *Core) Takeover(ctx context.Context, st *UnitState) error {
	if c.unit == nil || !c.unit.Standby {
		return errors.New("core: takeover by a unit that is not a standby")
	}
	if c.rec == nil {
		return errors.New("core: takeover by an unrecorded unit")
	}
	// The records go into this unit's store first: the restored NFs'
	// first steps (a timer past its deadline fires on restore) put
	// their deltas over them, never the other way round.
	for _, r := range st.Raw {
		if r.Kind == KindUnit {
			continue // putUnit writes this unit's below
		}
		if err := c.unit.Records.Put(r.Kind, r.Key, r.Rec); err != nil {
			return fmt.Errorf("core: takeover: copying the records: %w", err)
		}
	}
	// The AMF's and SMF's restored steps may call them at once.
	if err := c.UDM.Restore(st.UDM); err != nil {
		return fmt.Errorf("core: takeover: %w", err)
	}
	if err := c.AUSF.Restore(st.AUSF); err != nil {
		return fmt.Errorf("core: takeover: %w", err)
	}
	if err := c.PCF.Restore(st.PCF); err != nil {
		return fmt.Errorf("core: takeover: %w", err)
	}
	cp := st.SMF
	if err := c.SMF.Restore(&cp); err != nil {
		return fmt.Errorf("core: takeover: %w", err)
	}
	if err := c.AMF.Restore(st.AMF); err != nil {
		return fmt.Errorf("core: takeover: %w", err)
	}
	c.putUnit()
	if err := c.wireN4(); err != nil {
		return fmt.Errorf("core: takeover: %w", err)
	}
	return c.start(ctx)
}

// StopRecording ends the unit's recording for good: nothing it does from
// now on reaches its record store, which is its successor's. A unit that
// lost its front end, or that drained (Quiesce), stops recording before it
// closes, so that its own teardown (connections lost, sessions released
// by Close) is not what its successor restores.
func (c *Core) StopRecording() {
	if c.rec != nil {
		c.rec.stopped.Store(true)
	}
}

// Quiesce returns once every step the AMF and the SMF had queued when it
// was called has run (their records committed and their messages sent),
// or when ctx ends. A unit that drains calls it after its input stopped.
// A step of one NF may queue work on the other (the SMF's messages to the
// AMF), so both are passed twice.
func (c *Core) Quiesce(ctx context.Context) error {
	for range 2 {
		// Taking the records runs a function on every UE's executor
		// after what is queued there: a barrier.
		if _, err := c.AMF.Records(ctx); err != nil {
			return fmt.Errorf("core: quiesce: %w", err)
		}
		if _, err := c.SMF.Records(ctx); err != nil {
			return fmt.Errorf("core: quiesce: %w", err)
		}
	}
	return nil
}

// ServeN2 serves a gNB association that the N2 front end opened to this
// unit.
func (c *Core) ServeN2(conn sctp.Conn) { c.AMF.ServeConn(conn) }

// ResumeN2 serves a gNB association that the gNB set up with an earlier
// unit: the AMF takes the gNB's context from its NG Setup Request without
// answering it, and re-binds the restored UEs of that gNB to conn.
func (c *Core) ResumeN2(conn sctp.Conn, ngSetupRequest []byte) error {
	return c.AMF.ResumeConn(conn, ngSetupRequest)
}

// ResumeN2Done tells the AMF that every association the front end will
// resume has been handed to ResumeN2: the restored connections of the
// gNBs that were not are lost (amf.AMF.ResumeDone).
func (c *Core) ResumeN2Done() { c.AMF.ResumeDone() }
