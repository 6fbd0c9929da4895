package smf

// Records: the SMF's state as versioned values that another instance can
// be rebuilt from (issue 36, "state that can move").
//
// # What is recorded
//
// A UERecord per UE holds its SM contexts, one SessionRecord each: the
// identifiers handed out (SM context ref, the SMF's F-SEID, the UE IP
// address, the PCF's policy association id), what the PCF authorised
// (session AMBR, 5QI, ARP, a change waiting for the running procedure),
// the N4 side (the UPF by name, the life of the UPF the PFCP session was
// established in, the UPF's F-SEID, the N3 tunnels of both ends, a
// deletion sent), the user plane and its downlink while the UE is idle
// (smart buffering, paging backoff), the N2 handover in progress
// (target tunnel, indirect forwarding), the 5GSM procedure (state, PTI,
// which of N1 and N2 answered, the command and its T3591 or T3592 with
// its retransmission count, TS 24.501 §6.3.2.5, §6.3.3.5) and an
// establishment waiting for a UPF (wait.go). Every running timer is its
// absolute deadline. The PFCP rules the SMF installed (TS 29.244 §7.5.2,
// §7.5.4) are not copied: the SMF keeps none of its own, it derives them
// from these fields (establishmentRequest, restorationRequest), so the
// record holds what they are made of.
//
// A UPFRecord per UPF holds what the SMF knows of it beyond the
// configuration: its association (epoch, Node ID, UP function features,
// Recovery Time Stamp, TS 29.244 §6.2.6, §19A), the number of its current
// life (life.go), whether its sessions wait for restoration, the UE
// addresses held back for it (quarantine) and the PFCP session deletions
// pending there with the address each one holds back. A session names its
// UPF and life by name and number, so a restored SMF tells whether the
// session is in the UPF's current life or went with an earlier one (and
// waits for its restoration, restoration.go).
//
// A Checkpoint is all of it at once, with the SMF's own PFCP Recovery Time
// Stamp (a restored SMF advertises the one the UPFs know) and where its
// allocators stand (SM context refs, F-SEIDs, each pool's next-fit
// cursor).
//
// What is not recorded, and why, is in record_test.go's table (every
// field of the context structs is there, recorded or not): plumbing
// (executors, locks, back pointers, channels), configuration (a restored
// SMF has its own), indexes and counts derived from the records (the
// tables by ref and F-SEID, the waiting list, session and deletion
// gauges), statistics, and what this process alone knows of its peers
// (whether it is associated now, when it last associated). Messages
// queued for the AMF (the outbound queue) are outputs of steps already
// recorded: with a Recorder they are queued only after their step's record
// (output commit, endStep); whether they left before a failure is the
// front end's business (issue 36 §3); a lost Accept is recovered by the
// UE's T3580, a lost command by T3591/T3592.
//
// # Versions and deltas
//
// Every function that runs on a UE's executor as an event (a request, an
// answer, a report, a timer expiry) is a step and ends with endStep: the
// UE's Seq moves on by one and, when Deps.Recorder is set, the Recorder
// gets the UE's new record there, on the executor, before anything else
// of the UE runs. A step that changed nothing counts too: telling would
// cost a capture per step. A UE whose last session goes gives a record
// without sessions and leaves the SMF; its SUPI's next state starts again
// at Seq 1. A UPF's record changes outside the UEs' executors (its
// supervisor, the deletion workers, a release on a UE's executor): each
// change runs under its recMu (changeUPF), which moves its Seq on and
// hands the Recorder its record in the order of the changes. Without a
// Recorder a step costs an increment and a nil check.
//
// Records are encoded with package sbi/wire (compact, no JSON); its layout
// hash versions them, so a replica built from other record types refuses
// them (wire.ErrLayoutMismatch). Times are UTC without monotonic reading,
// byte slices are copies, lists are sorted: two captures of one state
// encode to the same bytes.
//
// # Restore
//
// Restore rebuilds a fresh SMF (New, then Restore, then Start) from a
// Checkpoint: it checks the whole checkpoint against the configuration
// first and changes nothing when it is refused. Then every allocator and
// index is rebuilt so that nothing a restored object holds is handed out
// again: the UE addresses (of sessions, quarantine and pending deletions)
// are taken out of their pools, whose cursors go where they stood; the SM
// context ref and F-SEID counters go past the recorded counters and past
// every restored context; the tables by SUPI, ref and F-SEID, the waiting
// list and the gauges are filled. UPF lives keep their numbers: a session
// of the current life is bound to the restored UPF's current life, one of
// an earlier life to an ended one. Timers are armed again at their
// deadlines on the UE's executor (serial.Timer.StartAt, Retransmission.
// Resume); one whose deadline has passed fires at once, there. Pending
// PFCP deletions of the UPF's current life are sent again once Start has
// dealt with the association: a UPF that had the session deleted already
// answers "Session context not found" (TS 29.244 §7.2.2.4.2), which ends
// the deletion as confirmed; those of an ended life are confirmed by
// that. An establishment recorded between CreateSMContext's answer and its
// N4 step (a continuation queued on the executor, not a state) is
// continued.
//
// Start, in a restored SMF, takes up the PFCP association its records
// show when the UPF answers a heartbeat with the recorded Recovery Time
// Stamp, rather than setting up a new one, which the UPF would answer by
// deleting the SMF's sessions (TS 29.244 §6.2.6.2.2): with the same Node
// ID and Recovery Time Stamp the UPF cannot tell the two processes apart.
// Reaching the UPF from the N4 address it knows, and re-binding the SBI
// callbacks, are the N4 and SBI front ends' part (issue 36 §3).
//
// A Checkpoint is consistent per object: each UE's record is taken on its
// executor, between two steps, each UPF's under its recMu, but not all at
// one instant. A checkpoint of a busy SMF may therefore show an address
// both in a session and in a deletion that began after that session's
// record was taken; Restore refuses such a checkpoint (an address held
// twice) rather than guess. The later records of each object, in order,
// resolve it: that is what the deltas are for.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
)

// Recorder receives the record of every object that a state-machine step
// changed: issue 36's delta per step (the whole record of the object; a
// record is small). Records handed to it are its own.
type Recorder interface {
	// RecordedUE is called on the UE's executor at the end of each of
	// its steps, with its new record; one without sessions is the UE's
	// last (it left the SMF). It holds up the UE while it runs.
	RecordedUE(r *UERecord)
	// RecordedUPF is called after each change of what a UPF's record
	// holds, in the order of the changes, under a lock of that UPF: it
	// must not call the SMF.
	RecordedUPF(r *UPFRecord)
	// RecordedAllocators is called when an establishment has taken an SM
	// context ref, a CP F-SEID and a UE address, before any of them
	// leaves the SMF (in the PCF's notification URI, a PFCP request, an
	// answer): under the SMF's allocator lock, each call with where the
	// allocators stand then, so a store that keeps the latest keeps the
	// furthest. It must not call the SMF.
	RecordedAllocators(r *AllocatorRecord)
}

// AllocatorRecord is where the SMF's allocators stand (issue 36 review
// item 11): a restored SMF continues from there exactly, so that it hands
// out nothing a dead instance handed out, not even what no record of a
// context holds any more (a session released since, a PFCP request whose
// answer was never recorded), and a released UE address is reused only
// after the rest of its pool, as before (next fit).
type AllocatorRecord struct {
	// NextRef and NextSEID are the last SM context ref and CP F-SEID
	// handed out.
	NextRef, NextSEID uint64
	Pools             []PoolRecord // by DNN, in configuration order
}

// Checkpoint is the SMF's state: what Records captures and Restore takes.
type Checkpoint struct {
	// RecoveryTime is the SMF's PFCP Recovery Time Stamp (TS 29.244
	// §19A), which the UPFs know it by.
	RecoveryTime time.Time
	// NextRef and NextSEID are the last SM context ref and CP F-SEID
	// handed out.
	NextRef, NextSEID uint64
	Pools             []PoolRecord // by DNN, in configuration order
	UPFs              []UPFRecord  // in configuration order
	UEs               []UERecord   // by SUPI
}

// PoolRecord is where a DNN's UE address pool stands.
type PoolRecord struct {
	DNN string
	// Next is the address the next allocation tries first (next fit:
	// released addresses are reused last).
	Next netip.Addr
}

// UERecord is one UE at the SMF: its SM contexts.
type UERecord struct {
	SUPI string
	// Seq is the version of the UE's state: +1 at each step of its
	// executor, from 1 in each stay of the UE at the SMF.
	Seq      uint64
	Sessions []SessionRecord // by PDU session ID
}

// SessionRecord is one PDU session (SM context). The numbered fields hold
// the SMF's own enumerations, in the order context.go and handover.go
// declare them.
type SessionRecord struct {
	ID        uint8  // PDU session ID (TS 24.501 §9.4)
	Ref       string // SM context reference
	StatusURI string // the AMF's smContextStatusUri (TS 29.502 §5.2.2.10)
	DNN       string
	SNSSAI    identity.SNSSAI
	CPSEID    uint64 // the SMF's F-SEID of the PFCP session (TS 29.244 §8.2.37)
	// Establishing is when the establishment was asked for, until its
	// outcome is reported.
	Establishing time.Time
	// State: 0 establishing, 1 waiting for the N2 setup, 2 active,
	// 3 modifying (T3591), 4 releasing (T3592) (TS 23.502 §4.3.2-§4.3.4).
	State     uint8
	UpCnx     models.Smf_PDUSess_UpCnxState // TS 29.502 upCnxState
	PTI       uint8                         // of the UE-requested procedure being answered
	UEIP      netip.Addr
	TypeCause uint8  // 5GSM cause in the Accept (#50 when IPv4v6 was asked for)
	PCO       []byte // extended PCO of the Accept
	PolicyID  string // SM policy association at the PCF (TS 29.512); "" once deleted
	QoS       QoSRecord
	// PendingQoS is a policy change that came during another procedure.
	PendingQoS *QoSRecord

	// UPF names the UPF (smf.upfs) and UPFLife the life of it the PFCP
	// session was established in (its UPFRecord.Life, or an earlier one:
	// the session went with it); UPSEID is the UPF's F-SEID (0: none).
	UPF     string
	UPFLife uint64
	UPSEID  uint64
	// ULTunnel is the UPF's N3 F-TEID, DLTunnel the 5G-AN's.
	ULTunnel, DLTunnel ngap.GTPTunnel
	// N4Lost: the PFCP session went with its UPF's life and a restoration
	// found the UPF gone again.
	N4Lost bool
	// Asked is the life of the UPF to which a PFCP Session Establishment
	// Request for the session went whose answer is not recorded (0:
	// none): the UPF may hold the session. Recorded before the request
	// leaves (intent before the request, issue 36); a restored SMF asks
	// that UPF again, in that life, and gets the session if it has it.
	Asked uint64
	// Deletion is the session's PFCP deletion once sent.
	Deletion *DeletedSession
	// ULMoved: a restoration gave another uplink F-TEID that the 5G-AN is
	// still to be told; ULMoving: the request telling it is out.
	ULMoved, ULMoving bool

	// Held: the establishment waits for a UPF until HoldUntil, for
	// HoldWhy; Avoid are the UPFs that failed it; Waited: it has waited.
	Held      bool
	HoldUntil time.Time
	HoldWhy   string
	Avoid     []AvoidedUPF
	Waited    bool

	// DL is the downlink of an idle UE: 0 buffered at the UPF, 1 the UE
	// is being paged (TS 23.502 §4.2.3.3), 2 dropped until
	// PagingBackoffUntil.
	DL                 uint8
	PagingBackoffUntil time.Time

	// HO is the N2 handover (TS 23.502 §4.9.1.3): 0 none, 1 preparing,
	// 2 prepared with the target's tunnel HOTarget (with
	// smf.mobility.handoverData smart, the UPF holds the downlink from
	// then: L25GC's smart buffering). Forwarding: indirect forwarding
	// rules are installed at the UPF, until ForwardingUntil once the
	// handover completed.
	HO              uint8
	HOTarget        ngap.GTPTunnel
	Forwarding      bool
	ForwardingUntil time.Time

	// N1Done and N2Done: the UE's and the 5G-AN's answers to the running
	// modification or release; Timer is its T3591 or T3592 retransmitting
	// Command (TS 24.501 §6.3.2.5, §6.3.3.5).
	N1Done, N2Done bool
	Timer          RetransmissionRecord
	Command        []byte
}

// QoSRecord is the authorized QoS of a session (the PCF's session rule,
// TS 29.512 §5.6.2.7).
type QoSRecord struct {
	AMBR   nas.SessionAMBR // bit/s
	FiveQI uint8
	ARP    models.Arp
}

// RetransmissionRecord is a network timer that retransmits a message
// (TS 24.501 §6.3.2.5, §6.3.3.5): its next expiry (zero: not running)
// and the sends made.
type RetransmissionRecord struct {
	Deadline time.Time
	Sends    uint8
}

// AvoidedUPF is a UPF that failed an establishment, passed over until it
// has associated again (its Epoch moved on).
type AvoidedUPF struct {
	UPF   string
	Epoch uint64
}

// DeletedSession is the PFCP session deletion a session sent (TS 23.502
// §4.3.4.2 step 2): the UPF's F-SEID and life, and its outcome once it
// ended (Gone: the UPF is known to hold the session no longer).
type DeletedSession struct {
	SEID, Life uint64
	Done, Gone bool
}

// UPFRecord is what the SMF knows of one UPF beyond its configuration.
type UPFRecord struct {
	Name string
	// Seq is the record's version: +1 at each change.
	Seq uint64
	// Life is the number of the UPF's current life (1 for the first, +1
	// each time the UPF lost its sessions).
	Life uint64
	// Epoch counts the associations set up; NodeID, Features and Recovery
	// are what the UPF said in the last one (TS 29.244 §7.4.4.2), and
	// Recovery what it said since.
	Epoch    uint64
	NodeID   *pfcp.NodeID
	Features uint64
	Recovery time.Time
	// MustRestore: the UPF's sessions wait for their restoration.
	MustRestore bool
	// Quarantine are the UE addresses held back until the UPF's life
	// ends; Deletions the PFCP session deletions pending there.
	Quarantine []HeldAddress    // by DNN and address
	Deletions  []DeletionRecord // by life and F-SEID
}

// HeldAddress is a UE address of a DNN's pool held back.
type HeldAddress struct {
	DNN string
	IP  netip.Addr
}

// DeletionRecord is a PFCP session deletion queued or in flight: the
// UPF's F-SEID and life, the session's UE and PDU session ID, and the UE
// address that waits for the deletion's end (invalid while the session's
// context still holds it).
type DeletionRecord struct {
	SEID, Life uint64
	SUPI       string
	PSI        uint8
	DNN        string
	UEIP       netip.Addr
}

// utc is t in UTC without monotonic reading, the zero Time as it is (so
// that a record compares equal to its decoded copy).
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// record is u's record. Runs on u's executor.
func (u *ueState) record() *UERecord {
	r := &UERecord{SUPI: u.supi, Seq: u.seq, Sessions: make([]SessionRecord, 0, len(u.sessions))}
	for _, c := range u.sessions {
		if c.state != stReleased {
			r.Sessions = append(r.Sessions, c.record())
		}
	}
	slices.SortFunc(r.Sessions, func(a, b SessionRecord) int { return cmp.Compare(a.ID, b.ID) })
	return r
}

func (q qos) record() QoSRecord { return QoSRecord{AMBR: q.ambr, FiveQI: q.fiveQI, ARP: q.arp} }

func (r QoSRecord) qos() qos { return qos{ambr: r.AMBR, fiveQI: r.FiveQI, arp: r.ARP} }

// record is c's record. Runs on c's executor.
func (c *smContext) record() SessionRecord {
	r := SessionRecord{
		ID: c.psi, Ref: c.ref, StatusURI: c.statusURI, SNSSAI: c.slice, CPSEID: c.cpSEID,
		Establishing: utc(c.establishing), State: uint8(c.state), UpCnx: c.upCnx, PTI: c.pti,
		UEIP: c.ueIP, TypeCause: uint8(c.typeCause), PCO: bytes.Clone(c.pco), PolicyID: c.policyID,
		QoS: c.qos.record(),

		UPSEID: c.upSEID, ULTunnel: c.ulTunnel, DLTunnel: c.dlTunnel, N4Lost: c.n4Lost,
		ULMoved: c.ulMoved, ULMoving: c.ulMoving,

		Asked: c.asked.number(),
		Held:  c.held, HoldUntil: utc(c.holdTimer.Deadline()), HoldWhy: c.holdWhy, Waited: c.waited,

		DL: uint8(c.dl), PagingBackoffUntil: utc(c.backoff.Deadline()),

		HO: uint8(c.ho), HOTarget: c.hoTarget, Forwarding: c.fwd, ForwardingUntil: utc(c.fwdTimer.Deadline()),

		N1Done: c.n1Done, N2Done: c.n2Done,
		Timer:   RetransmissionRecord{Deadline: utc(c.timer.Deadline()), Sends: uint8(min(c.timer.Sends(), math.MaxUint8))},
		Command: bytes.Clone(c.cmd),
	}
	if c.dnn != nil {
		r.DNN = c.dnn.name
	}
	if c.pending != nil {
		p := c.pending.record()
		r.PendingQoS = &p
	}
	if c.upf != nil {
		r.UPF = c.upf.name
	}
	if c.upLife != nil {
		r.UPFLife = c.upLife.gen
	}
	if d := c.n4Deletion; d != nil {
		done, gone := d.outcome()
		r.Deletion = &DeletedSession{SEID: d.seid, Life: d.life.gen, Done: done, Gone: gone}
	}
	for _, a := range c.avoid {
		r.Avoid = append(r.Avoid, AvoidedUPF{UPF: a.upf.name, Epoch: a.epoch})
	}
	return r
}

// recordLocked is u's record. Call it with u.recMu held.
func (u *upfNode) recordLocked() UPFRecord {
	r := UPFRecord{
		Name: u.name, Seq: u.seq, Life: u.life.Load().gen, Epoch: u.epoch.Load(),
		Features: u.features.Load(), Recovery: utc(u.recovery), MustRestore: u.mustRestore,
	}
	if id := u.nodeID.Load(); id != nil {
		n := *id
		r.NodeID = &n
	}
	for _, q := range u.quarantine.list() {
		r.Quarantine = append(r.Quarantine, HeldAddress{DNN: q.dnn.name, IP: q.ip})
	}
	slices.SortFunc(r.Quarantine, func(a, b HeldAddress) int {
		return cmp.Or(cmp.Compare(a.DNN, b.DNN), a.IP.Compare(b.IP))
	})
	for _, d := range u.deletions.list() {
		dr := DeletionRecord{SEID: d.seid, Life: d.life.gen, SUPI: d.supi, PSI: d.psi}
		if dnn, ip := d.waiting(); dnn != nil {
			dr.DNN, dr.UEIP = dnn.name, ip
		}
		r.Deletions = append(r.Deletions, dr)
	}
	slices.SortFunc(r.Deletions, func(a, b DeletionRecord) int {
		return cmp.Or(cmp.Compare(a.Life, b.Life), cmp.Compare(a.SEID, b.SEID))
	})
	return r
}

// changeUPF runs f, a change of what u's record holds, under u.recMu;
// then u's record version moves on and the Recorder, if any, gets the
// record. recMu is taken before the quarantine's, the deletions', a
// deletion's and a pool's locks, never after.
func (s *SMF) changeUPF(u *upfNode, f func()) {
	u.recMu.Lock()
	defer u.recMu.Unlock()
	f()
	u.seq++
	if s.recorder != nil {
		r := u.recordLocked()
		s.recorder.RecordedUPF(&r)
	}
}

// errNoRecord: the SMF holds no state for the SUPI.
var errNoRecord = errors.New("smf: no state for the UE")

// RecordUE returns supi's record, taken on its executor between two
// steps; errNoRecord (wrapped) when the SMF holds no session of it.
func (s *SMF) RecordUE(ctx context.Context, supi string) (*UERecord, error) {
	r, found, err := readUE(ctx, s, supi, (*ueState).record)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: record not taken: %w", supi, err)
	case !found || len(r.Sessions) == 0:
		return nil, fmt.Errorf("%s: %w", supi, errNoRecord)
	}
	return r, nil
}

// Records returns the SMF's Checkpoint: every UE's record, each taken on
// its executor (in parallel, as AllSessions does), then the UPFs' and the
// allocators'. It fails when a UE's executor did not get to it before ctx
// ended: a checkpoint leaves no UE out.
func (s *SMF) Records(ctx context.Context) (*Checkpoint, error) {
	cp := &Checkpoint{RecoveryTime: utc(s.start)}
	busy, err := readAll(ctx, s, (*ueState).record, func(r *UERecord) {
		if len(r.Sessions) > 0 {
			cp.UEs = append(cp.UEs, *r)
		}
	})
	if err != nil {
		return nil, err
	}
	if busy > 0 {
		return nil, fmt.Errorf("smf: records: %d UEs' executors busy until the deadline: %w", busy, ctx.Err())
	}
	slices.SortFunc(cp.UEs, func(a, b UERecord) int { return cmp.Compare(a.SUPI, b.SUPI) })
	// After the UEs: the counters cover every context captured.
	a := s.allocators()
	cp.NextRef, cp.NextSEID, cp.Pools = a.NextRef, a.NextSEID, a.Pools
	for _, u := range s.cfg.upfs {
		u.recMu.Lock()
		cp.UPFs = append(cp.UPFs, u.recordLocked())
		u.recMu.Unlock()
	}
	return cp, nil
}

// allocators is where the SMF's allocators stand.
func (s *SMF) allocators() AllocatorRecord {
	r := AllocatorRecord{NextRef: s.nextRef.Load(), NextSEID: s.nextSEID.Load()}
	for _, d := range s.cfg.order {
		r.Pools = append(r.Pools, PoolRecord{DNN: d.name, Next: d.pool.cursor()})
	}
	return r
}

// recordAllocators hands the Recorder, if any, where the allocators stand
// (Recorder.RecordedAllocators): call it after taking a ref, an F-SEID
// or an address and before any of them leaves the SMF. The lock orders
// the records: each holds what every allocation before it took.
func (s *SMF) recordAllocators() {
	if s.recorder == nil {
		return
	}
	s.allocMu.Lock()
	defer s.allocMu.Unlock()
	r := s.allocators()
	s.recorder.RecordedAllocators(&r)
}

// upfNamed is the configured UPF named name, or nil.
func (s *SMF) upfNamed(name string) *upfNode {
	for _, u := range s.cfg.upfs {
		if u.name == name {
			return u
		}
	}
	return nil
}

// Restore builds the SMF's state from cp (see the comment at the top of
// this file): call it once, on a new SMF, before Start. It checks all of
// cp first and changes nothing when it refuses it.
func (s *SMF) Restore(cp *Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.started || s.group.Closed():
		return errors.New("smf: Restore after Start or Close")
	case s.restored:
		return errors.New("smf: Restore called twice")
	case s.ues.Len() != 0 || s.nextRef.Load() != 0:
		return errors.New("smf: Restore on an SMF that has served requests")
	}
	if err := s.checkCheckpoint(cp); err != nil {
		return fmt.Errorf("smf: restore: %w", err)
	}
	s.restored = true
	s.restore(cp)
	return nil
}

// lifeKey names a life of a UPF.
type lifeKey struct {
	upf *upfNode
	gen uint64
}

// deletionKey names a PFCP session deletion.
type deletionKey struct {
	upf       *upfNode
	gen, seid uint64
}

// checkCheckpoint tells why cp cannot be restored into s, if it cannot:
// every name must be configured, every number in its range, and no
// identifier or address held twice. It changes nothing.
func (s *SMF) checkCheckpoint(cp *Checkpoint) error {
	if cp == nil {
		return errors.New("no checkpoint")
	}
	addrs := make(map[netip.Addr]string) // held addresses, by what holds them
	hold := func(dnn string, ip netip.Addr, by string) error {
		d := s.cfg.dnns[dnn]
		switch {
		case d == nil:
			return fmt.Errorf("%s: DNN %q is not configured", by, dnn)
		case !ip.IsValid():
			return nil
		}
		if _, ok := d.pool.index(ip); !ok {
			return fmt.Errorf("%s: %v is no address of %s's pool %s", by, ip, dnn, d.pool.prefix)
		}
		if other, dup := addrs[ip]; dup {
			return fmt.Errorf("%s: %v is held by %s too", by, ip, other)
		}
		addrs[ip] = by
		return nil
	}
	pools := make(map[string]bool)
	for i, p := range cp.Pools {
		d := s.cfg.dnns[p.DNN]
		switch {
		case d == nil:
			return fmt.Errorf("pools[%d]: DNN %q is not configured", i, p.DNN)
		case pools[p.DNN]:
			return fmt.Errorf("pools[%d]: DNN %q twice", i, p.DNN)
		case !p.Next.Is4() || !d.pool.prefix.Contains(p.Next):
			return fmt.Errorf("pools[%d]: next address %v not in %s", i, p.Next, d.pool.prefix)
		}
		pools[p.DNN] = true
	}
	lives := make(map[string]uint64) // current life by UPF name
	for i, r := range cp.UPFs {
		by := fmt.Sprintf("upfs[%d] (%s)", i, r.Name)
		switch {
		case s.upfNamed(r.Name) == nil:
			return fmt.Errorf("%s: UPF not configured", by)
		case lives[r.Name] != 0:
			return fmt.Errorf("%s: UPF twice", by)
		case r.Life == 0:
			return fmt.Errorf("%s: life 0", by)
		}
		lives[r.Name] = r.Life
		for j, q := range r.Quarantine {
			if !q.IP.IsValid() {
				return fmt.Errorf("%s: quarantine[%d]: no address", by, j)
			}
			if err := hold(q.DNN, q.IP, fmt.Sprintf("%s: quarantine[%d]", by, j)); err != nil {
				return err
			}
		}
		for j, d := range r.Deletions {
			at := fmt.Sprintf("%s: deletions[%d]", by, j)
			switch {
			case d.SEID == 0:
				return fmt.Errorf("%s: F-SEID 0", at)
			case d.Life == 0 || d.Life > r.Life:
				return fmt.Errorf("%s: life %d, the UPF's is %d", at, d.Life, r.Life)
			case d.DNN == "" && d.UEIP.IsValid():
				return fmt.Errorf("%s: address without DNN", at)
			case d.DNN != "":
				if err := hold(d.DNN, d.UEIP, at); err != nil {
					return err
				}
			}
		}
	}
	life := func(upf string, gen uint64, at string) error {
		cur, ok := lives[upf]
		switch {
		case upf == "":
			return fmt.Errorf("%s: no UPF", at)
		case !ok:
			return fmt.Errorf("%s: UPF %q has no record", at, upf)
		case gen == 0 || gen > cur:
			return fmt.Errorf("%s: life %d of UPF %q, whose life is %d", at, gen, upf, cur)
		}
		return nil
	}
	supis := make(map[string]bool)
	refs := make(map[string]bool)
	seids := make(map[uint64]bool)
	held := 0
	for i, ue := range cp.UEs {
		by := fmt.Sprintf("ues[%d] (%s)", i, ue.SUPI)
		switch {
		case ue.SUPI == "":
			return fmt.Errorf("ues[%d]: no SUPI", i)
		case supis[ue.SUPI]:
			return fmt.Errorf("%s: SUPI twice", by)
		case len(ue.Sessions) == 0:
			return fmt.Errorf("%s: no session", by)
		}
		supis[ue.SUPI] = true
		ids := make(map[uint8]bool)
		for _, r := range ue.Sessions {
			at := fmt.Sprintf("%s: session %d", by, r.ID)
			switch {
			case r.ID < 1 || r.ID > 15:
				return fmt.Errorf("%s: PDU session ID not in 1..15", at)
			case ids[r.ID]:
				return fmt.Errorf("%s: PDU session ID twice", at)
			case r.Ref == "" || refs[r.Ref]:
				return fmt.Errorf("%s: SM context ref %q empty or held twice", at, r.Ref)
			case r.CPSEID == 0 || seids[r.CPSEID]:
				return fmt.Errorf("%s: CP F-SEID %d zero or held twice", at, r.CPSEID)
			case smState(r.State) >= stReleased:
				return fmt.Errorf("%s: state %d", at, r.State)
			case dlState(r.DL) > dlDiscarding:
				return fmt.Errorf("%s: downlink state %d", at, r.DL)
			case hoState(r.HO) > hoPrepared:
				return fmt.Errorf("%s: handover state %d", at, r.HO)
			case r.UPF != "" && s.upfNamed(r.UPF) == nil:
				return fmt.Errorf("%s: UPF %q not configured", at, r.UPF)
			case !r.Timer.Deadline.IsZero() && (smState(r.State) != stModifying && smState(r.State) != stReleasing || len(r.Command) == 0):
				return fmt.Errorf("%s: a 5GSM timer runs in state %s, command of %d bytes", at, smState(r.State), len(r.Command))
			case r.Held && (smState(r.State) != stEstablishing || r.HoldUntil.IsZero()):
				return fmt.Errorf("%s: held in state %s, until %v", at, smState(r.State), r.HoldUntil)
			}
			switch r.UpCnx {
			case models.Smf_PDUSess_UpCnxState_ACTIVATED, models.Smf_PDUSess_UpCnxState_DEACTIVATED,
				models.Smf_PDUSess_UpCnxState_ACTIVATING:
			default:
				return fmt.Errorf("%s: upCnxState %q", at, r.UpCnx)
			}
			ids[r.ID], refs[r.Ref], seids[r.CPSEID] = true, true, true
			if r.DNN == "" {
				return fmt.Errorf("%s: no DNN", at)
			}
			if err := hold(r.DNN, r.UEIP, at); err != nil {
				return err
			}
			if r.UPSEID != 0 || r.UPFLife != 0 || r.N4Lost {
				if err := life(r.UPF, r.UPFLife, at); err != nil {
					return err
				}
			}
			if r.Asked != 0 {
				if smState(r.State) != stEstablishing || r.UPSEID != 0 {
					return fmt.Errorf("%s: an establishment asked for in state %s, UP F-SEID %d", at, smState(r.State), r.UPSEID)
				}
				if err := life(r.UPF, r.Asked, at+": establishment asked for"); err != nil {
					return err
				}
			}
			if d := r.Deletion; d != nil {
				if err := life(r.UPF, d.Life, at+": deletion"); err != nil {
					return err
				}
				if d.SEID == 0 {
					return fmt.Errorf("%s: deletion of F-SEID 0", at)
				}
			}
			for _, a := range r.Avoid {
				if s.upfNamed(a.UPF) == nil {
					return fmt.Errorf("%s: avoided UPF %q not configured", at, a.UPF)
				}
			}
			if r.Held {
				held++
			}
		}
	}
	if held > maxWaiting {
		return fmt.Errorf("%d establishments wait for a UPF, at most %d may", held, maxWaiting)
	}
	return nil
}

// restore applies cp, checked by checkCheckpoint, to s, new and not
// started.
func (s *SMF) restore(cp *Checkpoint) {
	if !cp.RecoveryTime.IsZero() {
		s.start = cp.RecoveryTime
	}
	ctx := s.group.Context()
	// Lives: the current one of each UPF keeps its number; sessions and
	// deletions of an earlier one get an ended life of that number.
	lives := make(map[lifeKey]*n4Life)
	lifeOf := func(u *upfNode, gen uint64) *n4Life {
		if cur := u.life.Load(); cur.gen == gen {
			return cur
		}
		k := lifeKey{u, gen}
		if l := lives[k]; l != nil {
			return l
		}
		l := newLife(ctx, gen)
		l.cancel()
		lives[k] = l
		return l
	}
	for _, p := range cp.Pools {
		s.cfg.dnns[p.DNN].pool.setCursor(p.Next)
	}
	deletions := make(map[deletionKey]*n4Deletion)
	for _, r := range cp.UPFs {
		u := s.upfNamed(r.Name)
		u.seq = r.Seq
		u.epoch.Store(r.Epoch)
		u.features.Store(r.Features)
		if r.NodeID != nil {
			id := *r.NodeID
			u.nodeID.Store(&id)
		}
		u.recovery, u.mustRestore = r.Recovery, r.MustRestore
		u.life.Swap(newLife(ctx, r.Life)).cancel()
		for _, q := range r.Quarantine {
			d := s.cfg.dnns[q.DNN]
			d.pool.reserve(q.IP)
			u.quarantine.add(d, q.IP)
		}
		for _, dr := range r.Deletions {
			l := lifeOf(u, dr.Life)
			if l.ended() {
				continue // gone with its life: its address is free
			}
			d := &n4Deletion{upf: u, seid: dr.SEID, life: l, supi: dr.SUPI, psi: dr.PSI}
			if dr.UEIP.IsValid() {
				dnn := s.cfg.dnns[dr.DNN]
				dnn.pool.reserve(dr.UEIP)
				d.dnn, d.ip = dnn, dr.UEIP
			}
			s.pendDeletion(d)
			deletions[deletionKey{u, dr.Life, dr.SEID}] = d
		}
	}
	nextRef, nextSEID := cp.NextRef, cp.NextSEID
	for _, ur := range cp.UEs {
		u := &ueState{supi: ur.SUPI, sessions: make(map[uint8]*smContext, len(ur.Sessions)), seq: ur.Seq}
		u.exec.Init(s.group)
		u.out.Init(s.group)
		s.ues.Put(u.supi, u)
		var arm []func()
		for _, r := range ur.Sessions {
			c := s.restoreContext(u, r, lifeOf, deletions)
			if n, err := strconv.ParseUint(c.ref, 10, 64); err == nil {
				nextRef = max(nextRef, n)
			}
			nextSEID = max(nextSEID, c.cpSEID)
			arm = append(arm, func() { s.rearm(c, r) })
		}
		// Timers start on the UE's executor, ahead of anything else of it.
		u.exec.Post(func() {
			for _, f := range arm {
				f()
			}
		})
	}
	s.nextRef.Store(nextRef)
	s.nextSEID.Store(nextSEID)
}

// pendDeletion takes over d, a deletion of the UPF's current life that a
// record shows pending: Start sends it.
func (s *SMF) pendDeletion(d *n4Deletion) {
	d.upf.deletions.track(d)
	d.upf.restored = append(d.upf.restored, d)
	s.stats.n4Deleting.Add(1)
}

// restoreContext builds the context r records for u and enters it in the
// tables and counts.
func (s *SMF) restoreContext(u *ueState, r SessionRecord, lifeOf func(*upfNode, uint64) *n4Life,
	deletions map[deletionKey]*n4Deletion) *smContext {
	c := &smContext{
		ref: r.Ref, statusURI: r.StatusURI, supi: u.supi, psi: r.ID, ue: u, dnn: s.cfg.dnns[r.DNN],
		slice: r.SNSSAI, cpSEID: r.CPSEID, establishing: r.Establishing,
		state: smState(r.State), upCnx: r.UpCnx, pti: r.PTI, ueIP: r.UEIP, typeCause: nas.Cause5GSM(r.TypeCause),
		pco: bytes.Clone(r.PCO), policyID: r.PolicyID, qos: r.QoS.qos(),
		upSEID: r.UPSEID, ulTunnel: r.ULTunnel, dlTunnel: r.DLTunnel, n4Lost: r.N4Lost,
		ulMoved: r.ULMoved, ulMoving: r.ULMoving,
		held: r.Held, holdWhy: r.HoldWhy, waited: r.Waited,
		dl: dlState(r.DL), ho: hoState(r.HO), hoTarget: r.HOTarget, fwd: r.Forwarding,
		n1Done: r.N1Done, n2Done: r.N2Done, cmd: bytes.Clone(r.Command),
	}
	if r.PendingQoS != nil {
		q := r.PendingQoS.qos()
		c.pending = &q
	}
	if r.UPF != "" {
		c.upf = s.upfNamed(r.UPF)
	}
	if r.UPFLife != 0 {
		c.upLife = lifeOf(c.upf, r.UPFLife)
	}
	if r.Asked != 0 {
		c.asked = lifeOf(c.upf, r.Asked)
	}
	if dr := r.Deletion; dr != nil {
		l := lifeOf(c.upf, dr.Life)
		d := deletions[deletionKey{c.upf, dr.Life, dr.SEID}]
		if d == nil {
			d = &n4Deletion{upf: c.upf, seid: dr.SEID, life: l, supi: c.supi, psi: c.psi}
			switch {
			case dr.Done:
				d.done, d.gone = true, dr.Gone
			case l.ended():
				d.done, d.gone = true, true
			default:
				// Pending when its context was recorded and not in its
				// UPF's record: sent again.
				s.pendDeletion(d)
			}
		}
		c.n4Deletion = d
	}
	for _, a := range r.Avoid {
		c.avoid = append(c.avoid, avoidedUPF{upf: s.upfNamed(a.UPF), epoch: a.Epoch})
	}
	if c.ueIP.IsValid() {
		c.dnn.pool.reserve(c.ueIP)
	}
	u.sessions[c.psi] = c
	s.contexts.Put(c.ref, c)
	s.seids.Put(c.cpSEID, c)
	s.stats.contexts.Add(1)
	if c.policyID != "" {
		s.stats.policies.Add(1)
	}
	if c.upSEID != 0 {
		c.upf.sessions.Add(1)
		s.stats.n4Sessions.Add(1)
	}
	if c.held {
		s.waiting.add(c)
	}
	return c
}

// rearm starts c's timers again where r recorded them, and continues an
// establishment recorded before its N4 step. Runs on c's executor.
func (s *SMF) rearm(c *smContext, r SessionRecord) {
	if !r.Timer.Deadline.IsZero() {
		s.resumeTimer(c, r.Timer.Deadline, int(r.Timer.Sends))
	}
	if !r.HoldUntil.IsZero() {
		c.holdTimer.StartAt(&c.ue.exec, r.HoldUntil, func() { s.waitEnded(c) })
	}
	if !r.PagingBackoffUntil.IsZero() {
		c.backoff.StartAt(&c.ue.exec, r.PagingBackoffUntil, func() { s.backoffEnded(c) })
	}
	if !r.ForwardingUntil.IsZero() {
		c.fwdTimer.StartAt(&c.ue.exec, r.ForwardingUntil, func() { s.forwardingHeld(c) })
	}
	if c.state == stEstablishing && !c.held && c.upSEID == 0 {
		// CreateSMContext had answered and its N4 step was queued.
		s.post(c.ue, func() { s.completeEstablishment(c) })
	}
}
