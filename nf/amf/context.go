package amf

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/shardmap"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sctp"
)

// maxAMFUENGAPID is the largest AMF UE NGAP ID (TS 38.413 §9.3.3.1: 0..2^40-1).
const maxAMFUENGAPID = 1<<40 - 1

// gnb is the NG-RAN node context of one SCTP association (TS 38.413 §8.7.1).
// One goroutine reads the association (serveGNB); sends may come from any UE
// executor and are serialised by sendMu.
type gnb struct {
	amf  *AMF
	conn sctp.Conn
	log  *slog.Logger

	sendMu sync.Mutex

	// Written by the reader goroutine only, during NG Setup.
	setupDone bool
	// tais are the gNB's supported TAs that we also serve; replaced as a
	// whole by a repeated NG Setup while UE executors read it.
	tais atomic.Pointer[[]identity.TAI]

	mu   sync.Mutex
	ues  map[int64]*ranUE // by RAN UE NGAP ID
	dead bool             // association gone: no new connections
}

// streamFor picks the SCTP stream of a UE-associated signalling connection:
// stream 0 is for non-UE-associated signalling (TS 38.412 §7).
func (g *gnb) streamFor(amfUEID int64) uint16 {
	n := g.conn.OutboundStreams()
	if n <= 1 {
		return 0
	}
	return 1 + uint16(amfUEID%int64(n-1))
}

// removeUE drops r from the gNB's table if it is still the entry for its ID.
func (g *gnb) removeUE(r *ranUE) {
	g.mu.Lock()
	if g.ues[r.ranID] == r {
		delete(g.ues, r.ranID)
	}
	g.mu.Unlock()
}

// ranUE is one UE-associated logical NG-connection (TS 38.413 §3.1): the pair
// of NGAP IDs on one gNB. It belongs to exactly one UE context; a UE that
// re-registers on a new connection gets a new ranUE.
type ranUE struct {
	gnb    *gnb
	ue     *ue
	amfID  int64
	ranID  int64
	stream uint16

	// Fields below are owned by ue's executor.
	tai       identity.TAI
	loc       ngap.UserLocationNR // last User Location Information (TS 38.413 §9.3.1.16)
	ctxSetup  bool                // Initial Context Setup done: the gNB has the AS security context
	secured   bool                // secure exchange of NAS messages established (TS 24.501 §4.4.4.3)
	releasing bool                // UE Context Release Command sent
	ambrSent  bool                // the gNB has the UE-AMBR (TS 38.413 §8.2.1.2)
	// relSessions are the PDU sessions the gNB listed in UE Context
	// Release Complete (TS 38.413 §9.2.2.6).
	relSessions []uint8
}

// gmmState is the AMF-side 5GMM state of a UE (TS 24.501 §5.1.3.4).
type gmmState uint8

const (
	gmmDeregistered gmmState = iota
	gmmCommonProcedureInitiated
	gmmRegistered
	gmmDeregisteredInitiated
)

func (s gmmState) String() string {
	switch s {
	case gmmDeregistered:
		return "5GMM-DEREGISTERED"
	case gmmCommonProcedureInitiated:
		return "5GMM-COMMON-PROCEDURE-INITIATED"
	case gmmRegistered:
		return "5GMM-REGISTERED"
	case gmmDeregisteredInitiated:
		return "5GMM-DEREGISTERED-INITIATED"
	}
	return "5GMM-?"
}

// ue is the AMF UE context (TS 23.502 §5.2.2.2 "UE context in AMF"). All
// fields except the executor's are owned by the executor: every message,
// timer expiry and SBI result for this UE runs there, one at a time, so the
// procedures need no locks and different UEs run in parallel.
type ue struct {
	amf *AMF
	log *slog.Logger

	exec executor

	ran     *ranUE // current N2 connection; nil in CM-IDLE
	state   gmmState
	removed bool // context deleted; late events are dropped
	// connected mirrors ran != nil && !removed for other goroutines
	// (N1N2MessageTransfer answers from the SMF's goroutine); the executor
	// writes it with ran (setConnection).
	connected atomic.Bool

	supi       string
	suci       string
	pei        string // IMEISV from Security Mode Complete
	guti       identity.GUTI
	hasGUTI    bool
	oldGUTI    identity.GUTI // kept valid until Registration Complete (TS 24.501 §5.5.1.2.4)
	hasOldGUTI bool

	// NAS security (TS 33.501 §6.2, §6.7).
	sec       *nas.SecurityContext // current context, nil before SMC
	kamf      []byte
	ngKSI     uint8
	ueSecCap  nas.UESecurityCapability
	hasSecCap bool

	subscribed   []sbi.SubscribedSNSSAI // from Nudm_SDM am-data; nil until fetched
	allowedNSSAI []identity.SNSSAI
	ueAMBR       *ngap.AMBR // subscribed UE-AMBR from am-data (TS 23.501 §5.7.2.6); nil = none

	// sessions are the UE's PDU sessions by PDU session ID (TS 23.502
	// §5.2.2.2.2: PDU session ID, SMF, S-NSSAI, DNN).
	sessions map[uint8]*pduSession

	reg    registrationProc
	auth   authProc
	smc    securityModeProc
	ident  identificationProc
	timers [numTimers]nasTimer
}

// executor serialises the work of one UE. Work items run on a goroutine that
// exists only while the queue is non-empty, so idle UEs cost no goroutine.
type executor struct {
	mu      sync.Mutex
	queue   []func()
	head    int
	running bool
}

// post queues f to run on u's executor after everything posted before it.
// Work posted after the AMF closed is dropped.
func (u *ue) post(f func()) {
	e := &u.exec
	e.mu.Lock()
	e.queue = append(e.queue, f)
	if e.running {
		e.mu.Unlock()
		return
	}
	if !u.amf.acquireWorker() {
		e.queue = e.queue[:0]
		e.head = 0
		e.mu.Unlock()
		return
	}
	e.running = true
	e.mu.Unlock()
	go u.drain()
}

// runFromReader runs f for u on the calling goroutine, an association's
// reader, when u's executor is idle; otherwise it queues f behind u's
// pending work, as post does. Inline execution saves starting a goroutine
// and a scheduler handoff (on an otherwise idle machine, a wake-up of
// another CPU) per message, which dominated the AMF's time per message.
// Per-UE serialisation is kept: the executor is marked running while f
// runs, so anything posted for u meanwhile (a timer, another UE's
// supersession) queues and runs after f, on a drain goroutine, so the
// reader is not held by work that arrived from elsewhere.
//
// The cost is that the reader does not read while f runs: the AMF's SBI
// consumers are in-process calls of microseconds; a slow one would delay
// the other UEs of the same gNB (but not other gNBs).
func (u *ue) runFromReader(f func()) {
	e := &u.exec
	e.mu.Lock()
	if e.running {
		e.queue = append(e.queue, f)
		e.mu.Unlock()
		return
	}
	if !u.amf.acquireWorker() {
		e.mu.Unlock()
		return
	}
	e.running = true
	e.mu.Unlock()
	f()
	e.mu.Lock()
	if e.head == len(e.queue) {
		clear(e.queue)
		e.queue = e.queue[:0]
		e.head = 0
		e.running = false
		e.mu.Unlock()
		u.amf.releaseWorker()
		return
	}
	e.mu.Unlock()
	go u.drain() // inherits the worker reference
}

func (u *ue) drain() {
	defer u.amf.releaseWorker()
	e := &u.exec
	for {
		e.mu.Lock()
		if e.head == len(e.queue) {
			clear(e.queue)
			e.queue = e.queue[:0]
			e.head = 0
			e.running = false
			e.mu.Unlock()
			return
		}
		f := e.queue[e.head]
		e.queue[e.head] = nil
		e.head++
		e.mu.Unlock()
		f()
	}
}

// ranUETable maps AMF UE NGAP IDs to N2 connections.
type ranUETable struct{ shardmap.Map[int64, *ranUE] }

func newRANUETable() *ranUETable {
	t := &ranUETable{}
	t.Init(func(id int64) uint32 { return uint32(id) })
	return t
}

func (t *ranUETable) put(r *ranUE)    { t.Put(r.amfID, r) }
func (t *ranUETable) delete(r *ranUE) { t.CompareAndDelete(r.amfID, r) }

// supiTable maps SUPIs to UE contexts, so that a second registration of the
// same subscriber replaces the first context (TS 23.502 §4.2.2.2.2 step 5).
type supiTable struct{ shardmap.Map[string, *ue] }

func newSUPITable() *supiTable {
	t := &supiTable{}
	t.Init(supiHash)
	return t
}

// supiHash is FNV-1a over the last digits: enough spread, no allocation.
func supiHash(s string) uint32 {
	h := uint32(2166136261)
	for i := max(0, len(s)-8); i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
