// Package amf is tern's Access and Mobility Management Function: it
// terminates N2 (NGAP over SCTP, TS 38.413) and N1 (5GMM NAS, TS 24.501) and
// runs registration, 5G-AKA (as SEAF, TS 33.501 §6.1.3.2), NAS security mode
// control, identification and UE-initiated deregistration, consuming the
// AUSF, UDM and NSSF through the transport-neutral interfaces of package sbi.
//
// Concurrency (package internal/serial): one goroutine reads each SCTP
// association and only decodes and dispatches; everything about one UE
// runs on that UE's executor, a queue drained by a goroutine that exists
// only while there is work, so the procedures of one UE are serialised,
// different UEs run in parallel without a global lock, and a UE whose SBI
// call waits for its deadline delays no other UE. Each UE's state is one
// explicit state machine (ue_state.go).
package amf

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/internal/serial"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sctp"
)

// Deps are the SBI services the AMF consumes.
type Deps struct {
	AUSF sbi.UEAuthentication         // Nausf_UEAuthentication
	SDM  sbi.SubscriberDataManagement // Nudm_SDM
	UECM sbi.UEContextManagement      // Nudm_UECM
	NSSF sbi.NetworkSliceSelection    // Nnssf_NSSelection
	// SMF is Nsmf_PDUSession. nil: no SMF; 5GSM messages from UEs are
	// answered "payload was not forwarded" (TS 24.501 §5.4.5.2.5). Since the
	// SMF consumes the AMF too, it may also be supplied later with SetSMF.
	SMF sbi.PDUSession
	// SMFSelector, when set, picks the SMF of each new PDU session by
	// S-NSSAI and DNN (several SMFs, found through the NRF); the session's
	// later calls go to the SMF it picked. nil: every session goes to SMF.
	SMFSelector SMFSelector
	// Clock is where the UE steps take their time and the timers their
	// expiries (internal/serial); nil: the wall clock. A replay of logged
	// inputs runs on a serial.ManualClock (replay.go).
	Clock serial.Clock
}

// SMFSelector picks the SMF serving a PDU session's S-NSSAI and DNN
// (TS 23.501 §6.3.2).
type SMFSelector interface {
	SelectSMF(ctx context.Context, snssai identity.SNSSAI, dnn string) (sbi.PDUSession, error)
}

func (d Deps) validate() error {
	switch {
	case d.AUSF == nil:
		return errors.New("amf deps: AUSF (sbi.UEAuthentication) is nil")
	case d.SDM == nil:
		return errors.New("amf deps: SDM (sbi.SubscriberDataManagement) is nil")
	case d.UECM == nil:
		return errors.New("amf deps: UECM (sbi.UEContextManagement) is nil")
	case d.NSSF == nil:
		return errors.New("amf deps: NSSF (sbi.NetworkSliceSelection) is nil")
	}
	return nil
}

// AMF is one AMF instance.
type AMF struct {
	cfg        *servedConfig
	sctpCfg    sctp.Config
	n2Addr     string
	instanceID string
	apiRoot    string        // prefix of the callback URIs (Config.APIRoot)
	statusSeq  atomic.Uint64 // makes each smContextStatusUri unique
	deps       Deps
	smf        atomic.Pointer[sbi.PDUSession] // Deps.SMF or SetSMF's; nil = none
	procs      procedures.Reporter            // procedure ends: log and Observer
	log        *slog.Logger

	// group owns every goroutine the AMF starts (association readers, UE
	// executors); its context, cancelled by Close, bounds outbound calls.
	group *serial.Group

	nextAMFUEID atomic.Int64
	nextUEID    atomic.Uint64 // names UE contexts in records (record.go)
	// tmsiKey is the secret of the 5G-TMSI draws (guti.go): random at New,
	// carried by the Checkpoint so that a replica draws the same ones.
	tmsiKey [32]byte
	// delivered is the stamp up to which the outputs of the inputs being
	// replayed have left already (replay.go); 0: not replaying. lastStamp
	// is the highest stamp a reader took while replaying.
	delivered, lastStamp atomic.Uint64
	ranUEs               *ranUETable
	gutis                *gutiTable
	supis                *supiTable

	// sink takes the UE records after each step that changed them; nil:
	// none (record.go).
	sink atomic.Pointer[RecordSink]

	mu        sync.Mutex
	listeners []sctp.Listener
	gnbs      map[*gnb]struct{}
	// detached are the gNBs of restored connections that have not
	// connected to this instance, by Global RAN Node ID (record_restore.go).
	detached map[ngap.GlobalGNBID]*gnb
	// restoredConns and replayHorizon are what Restore learnt of the
	// stamps its records applied, for the replay that follows (dedup.go):
	// by restored connection, the stamp its UE's record holds for the
	// connection's gNB; by gNB, the highest stamp any record holds. Set
	// before the AMF serves, read-only after.
	restoredConns map[legKey]uint64
	replayHorizon map[ngap.GlobalGNBID]uint64

	stats counters
}

// New validates cfg (after applying defaults) and builds an AMF. It does not
// listen: call Start or Serve.
func New(cfg Config, deps Deps, logger *slog.Logger) (*AMF, error) {
	cfg = cfg.WithDefaults()
	served, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	id := cfg.InstanceID
	if id == "" {
		id = identity.NewNFInstanceID()
	}
	a := &AMF{
		cfg:        served,
		sctpCfg:    cfg.SCTP,
		n2Addr:     cfg.N2Address,
		instanceID: id,
		apiRoot:    strings.TrimSuffix(cfg.APIRoot, "/"),
		deps:       deps,
		log:        logger.With("nf", "amf"),
		group:      serial.NewGroupClock(deps.Clock),
		ranUEs:     newRANUETable(),
		gutis:      newGUTITable(),
		supis:      newSUPITable(),
		gnbs:       make(map[*gnb]struct{}),
	}
	if a.sctpCfg.Logger == nil {
		a.sctpCfg.Logger = logger
	}
	if _, err := rand.Read(a.tmsiKey[:]); err != nil {
		return nil, fmt.Errorf("amf: 5G-TMSI key: %w", err)
	}
	if deps.SMF != nil {
		a.SetSMF(deps.SMF)
	}
	return a, nil
}

// SetSMF sets the Nsmf_PDUSession service the AMF uses from now on (nil:
// none). The SMF and the AMF consume each other, so one of them is built
// first and given the other afterwards; safe to call at any time.
func (a *AMF) SetSMF(s sbi.PDUSession) {
	if s == nil {
		a.smf.Store(nil)
		return
	}
	a.smf.Store(&s)
}

// smfService returns the SMF, or nil when there is none.
func (a *AMF) smfService() sbi.PDUSession {
	if p := a.smf.Load(); p != nil {
		return *p
	}
	return nil
}

// callCtx bounds one outbound SBI call made for a UE: a peer that does not
// answer costs the UE its deadline, then the procedure's failure path runs.
func (a *AMF) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(a.group.Context(), a.cfg.timers.SBI)
}

// Start listens on the configured N2 address and serves associations in the
// background until Close. ctx only bounds the start itself.
func (a *AMF) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l, err := sctp.Listen(a.sctpCfg, a.n2Addr)
	if err != nil {
		return fmt.Errorf("amf: listen on N2 %s: %w", a.n2Addr, err)
	}
	a.log.Info("N2 listening", "addr", l.Addr().String(), "transport", string(a.sctpCfg.Transport))
	return a.Serve(l)
}

// Serve accepts associations from l in the background until Close or until
// l fails; the AMF takes ownership of l and closes it in Close.
func (a *AMF) Serve(l sctp.Listener) error {
	a.mu.Lock()
	a.listeners = append(a.listeners, l)
	a.mu.Unlock()
	if !a.group.Go(func() { a.acceptLoop(l) }) {
		l.Close()
		return errors.New("amf: closed")
	}
	return nil
}

func (a *AMF) acceptLoop(l sctp.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !a.group.Closed() {
				a.log.Warn("N2 accept stopped", "err", err)
			}
			return
		}
		a.ServeConn(c)
	}
}

// ServeConn serves one already-established association (a gNB) in the
// background. The AMF owns c from now on.
func (a *AMF) ServeConn(c sctp.Conn) {
	g := &gnb{amf: a, ues: make(map[int64]*ranUE), log: a.log.With("gnb", c.RemoteAddr().String())}
	g.assoc.Store(&c)
	a.mu.Lock()
	a.gnbs[g] = struct{}{}
	a.mu.Unlock()
	if !a.group.Go(func() { a.serveGNB(g) }) {
		a.mu.Lock()
		delete(a.gnbs, g)
		a.mu.Unlock()
		c.Close()
	}
}

// Close stops listening, closes every association, stops all timers and
// waits for every goroutine the AMF started. UE contexts are dropped without
// signalling (the AMF is going away). The associations are closed in
// parallel: a dead gNB costs the SCTP shutdown timeout once, not once per
// gNB.
func (a *AMF) Close() error {
	if a.group.Closed() {
		return nil
	}
	var errs []error
	a.group.CloseFunc(func() {
		a.mu.Lock()
		ls := a.listeners
		gs := make([]*gnb, 0, len(a.gnbs))
		for g := range a.gnbs {
			gs = append(gs, g)
		}
		a.mu.Unlock()
		for _, l := range ls {
			if err := l.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close listener: %w", err))
			}
		}
		var wg sync.WaitGroup
		for _, g := range gs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.conn().Close()
			}()
		}
		wg.Wait()
	})
	// No executor runs any more (Post refuses work after Close), so the
	// timers can be touched safely; stopping them releases the runtime
	// timers now instead of letting them fire into a closed AMF.
	for _, r := range a.ranUEs.All() {
		r.ue.stopAllTimers()
	}
	for _, u := range a.supis.All() {
		u.stopAllTimers()
	}
	return errors.Join(errs...)
}

// Addr returns the address of the first listener, or nil.
func (a *AMF) Addr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.listeners) == 0 {
		return ""
	}
	return a.listeners[0].Addr().String()
}

// Stats is a snapshot of the AMF's counters.
type Stats struct {
	RegisteredUEs       int64  // UEs in RM-REGISTERED
	ConnectedUEs        int64  // UEs in CM-CONNECTED
	IdleUEs             int64  // RM-REGISTERED UEs in CM-IDLE
	UEContexts          int64  // UE contexts held (registered or in a procedure)
	GNBs                int64  // associations with a successful NG Setup
	NGSetups            uint64 // NG Setup Responses sent
	NGSetupFailures     uint64
	NGResets            uint64 // NG Resets received from or sent to gNBs
	Registrations       uint64 // Registration Complete received
	RegistrationRejects uint64
	Authentications     uint64 // successful 5G-AKA runs
	AuthenticationFails uint64 // Authentication Reject sent
	Resyncs             uint64 // AUTS re-synchronisations
	SecurityModes       uint64 // Security Mode Complete received
	Identifications     uint64 // Identity Response received
	Deregistrations     uint64 // UE-originating deregistrations
	ErrorIndications    uint64 // NGAP Error Indications sent
	NASDiscarded        uint64 // NAS messages dropped (bad MAC, not allowed unprotected, ...)
	Refused             uint64 // events the UE state machine did not allow in the UE's state
	Retransmissions     uint64 // NAS retransmissions on T3550/T3560/T3570/T3513/T3522 expiry
	ProcedureTimeouts   uint64 // procedures aborted after the last retransmission
	UEContextReleases   uint64 // UE Context Release Complete received
	PDUSessions         int64  // PDU sessions (SM contexts) the AMF holds
	SMContextsCreated   uint64 // successful Nsmf_PDUSession_CreateSMContext
	SMContextsRejected  uint64 // establishments refused by the SMF or not forwarded
	SMContextsReleased  uint64 // PDU sessions forgotten (SMF notify, AMF release)
	N1N2Transfers       uint64 // Namf_Communication_N1N2MessageTransfer accepted

	// Idle mode and mobility.
	ServiceRequests         uint64 // Service Accept sent
	ServiceRejects          uint64 // Service Reject sent
	Pagings                 uint64 // paging procedures started (each may send several Paging rounds)
	PagingFailures          uint64 // paging procedures ended by T3513's last expiry
	ImplicitDeregistrations uint64 // UEs deregistered when their implicit deregistration timer expired
	NetworkDeregistrations  uint64 // network-initiated deregistrations completed
	PendingTransfers        int64  // N1N2MessageTransfers waiting for a paged UE
	Handovers               uint64 // N2 handovers prepared (Handover Request sent)
	HandoversCompleted      uint64 // N2 handovers completed (Handover Notify)
	HandoverFailures        uint64 // N2 handovers failed, cancelled or timed out
	PathSwitches            uint64 // Xn handovers (Path Switch Request Acknowledge sent)
	PathSwitchFailures      uint64 // Path Switch Request Failure sent

	// Resiliency (issue 36).
	ReplayDuplicates uint64 // replayed N2 messages handled before a takeover: acknowledged, not run again
	OutputsResent    uint64 // NGAP messages of a replayed message's step sent again (they may not have left)
}

type counters struct {
	registered, connected, contexts, gnbs           atomic.Int64
	idle                                            atomic.Int64
	ngSetups, ngSetupFailures, ngResets             atomic.Uint64
	registrations, regRejects                       atomic.Uint64
	auths, authFails, resyncs, smcs, idents, deregs atomic.Uint64
	errorIndications, nasDiscarded, refused         atomic.Uint64
	retransmissions, timeouts, releases             atomic.Uint64
	pduSessions                                     atomic.Int64
	smCreated, smRejected, smReleased, n1n2         atomic.Uint64
	serviceRequests, serviceRejects                 atomic.Uint64
	pagings, pagingFailures                         atomic.Uint64
	implicitDeregs, networkDeregs                   atomic.Uint64
	pendingTransfers                                atomic.Int64
	handovers, handoversDone, handoverFailures      atomic.Uint64
	pathSwitches, pathSwitchFailures                atomic.Uint64
	// replaySuppressed counts the NGAP messages of replayed steps not sent
	// again (replay.go).
	replaySuppressed atomic.Uint64
	// replayDuplicates counts the replayed messages that a step handled
	// before a takeover: acknowledged, not run again (dedup.go).
	replayDuplicates atomic.Uint64
	// outputsResent counts the NGAP messages of a context's last step sent
	// again for its replayed input (dedup.go).
	outputsResent atomic.Uint64
}

// Stats returns a snapshot of the counters.
func (a *AMF) Stats() Stats {
	c := &a.stats
	return Stats{
		RegisteredUEs:       c.registered.Load(),
		ConnectedUEs:        c.connected.Load(),
		IdleUEs:             c.idle.Load(),
		UEContexts:          c.contexts.Load(),
		GNBs:                c.gnbs.Load(),
		NGSetups:            c.ngSetups.Load(),
		NGSetupFailures:     c.ngSetupFailures.Load(),
		NGResets:            c.ngResets.Load(),
		Registrations:       c.registrations.Load(),
		RegistrationRejects: c.regRejects.Load(),
		Authentications:     c.auths.Load(),
		AuthenticationFails: c.authFails.Load(),
		Resyncs:             c.resyncs.Load(),
		SecurityModes:       c.smcs.Load(),
		Identifications:     c.idents.Load(),
		Deregistrations:     c.deregs.Load(),
		ErrorIndications:    c.errorIndications.Load(),
		NASDiscarded:        c.nasDiscarded.Load(),
		Refused:             c.refused.Load(),
		Retransmissions:     c.retransmissions.Load(),
		ProcedureTimeouts:   c.timeouts.Load(),
		UEContextReleases:   c.releases.Load(),
		PDUSessions:         c.pduSessions.Load(),
		SMContextsCreated:   c.smCreated.Load(),
		SMContextsRejected:  c.smRejected.Load(),
		SMContextsReleased:  c.smReleased.Load(),
		N1N2Transfers:       c.n1n2.Load(),

		ServiceRequests:         c.serviceRequests.Load(),
		ServiceRejects:          c.serviceRejects.Load(),
		Pagings:                 c.pagings.Load(),
		PagingFailures:          c.pagingFailures.Load(),
		ImplicitDeregistrations: c.implicitDeregs.Load(),
		NetworkDeregistrations:  c.networkDeregs.Load(),
		PendingTransfers:        c.pendingTransfers.Load(),
		Handovers:               c.handovers.Load(),
		HandoversCompleted:      c.handoversDone.Load(),
		HandoverFailures:        c.handoverFailures.Load(),
		PathSwitches:            c.pathSwitches.Load(),
		PathSwitchFailures:      c.pathSwitchFailures.Load(),

		ReplayDuplicates: c.replayDuplicates.Load(),
		OutputsResent:    c.outputsResent.Load(),
	}
}

// InstanceID is the AMF's NF instance ID (Config.InstanceID or the UUID
// made at start).
func (a *AMF) InstanceID() string { return a.instanceID }
