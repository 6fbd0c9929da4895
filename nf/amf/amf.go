// Package amf is tern's Access and Mobility Management Function: it
// terminates N2 (NGAP over SCTP, TS 38.413) and N1 (5GMM NAS, TS 24.501) and
// runs registration, 5G-AKA (as SEAF, TS 33.501 §6.1.3.2), NAS security mode
// control, identification and UE-initiated deregistration, consuming the
// AUSF, UDM and NSSF through the transport-neutral interfaces of package sbi.
//
// Concurrency: one goroutine reads each SCTP association; everything about
// one UE runs on that UE's executor (a queue drained by a goroutine that
// exists only while there is work, or run inline by the reader when the UE
// has nothing queued), so procedures of one UE are serialised and different
// UEs run in parallel without a global lock.
package amf

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

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
	deps       Deps
	smf        atomic.Pointer[sbi.PDUSession] // Deps.SMF or SetSMF's; nil = none
	log        *slog.Logger

	// ctx is cancelled by Close; SBI calls use it.
	ctx    context.Context
	cancel context.CancelFunc

	nextAMFUEID atomic.Int64
	ranUEs      *ranUETable
	gutis       *gutiTable
	supis       *supiTable

	// life guards the worker group against Add after Close.
	life      sync.RWMutex
	closed    bool
	workers   sync.WaitGroup
	listeners []sctp.Listener
	gnbs      map[*gnb]struct{}

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
		id = newUUID()
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &AMF{
		cfg:        served,
		sctpCfg:    cfg.SCTP,
		n2Addr:     cfg.N2Address,
		instanceID: id,
		deps:       deps,
		log:        logger.With("nf", "amf"),
		ctx:        ctx,
		cancel:     cancel,
		ranUEs:     newRANUETable(),
		gutis:      newGUTITable(),
		supis:      newSUPITable(),
		gnbs:       make(map[*gnb]struct{}),
	}
	if a.sctpCfg.Logger == nil {
		a.sctpCfg.Logger = logger
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
	a.life.Lock()
	if a.closed {
		a.life.Unlock()
		l.Close()
		return errors.New("amf: closed")
	}
	a.listeners = append(a.listeners, l)
	a.workers.Add(1)
	a.life.Unlock()
	go a.acceptLoop(l)
	return nil
}

func (a *AMF) acceptLoop(l sctp.Listener) {
	defer a.workers.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			if !a.isClosed() {
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
	g := &gnb{amf: a, conn: c, ues: make(map[int64]*ranUE),
		log: a.log.With("gnb", c.RemoteAddr().String())}
	a.life.Lock()
	if a.closed {
		a.life.Unlock()
		c.Close()
		return
	}
	a.gnbs[g] = struct{}{}
	a.workers.Add(1)
	a.life.Unlock()
	go a.serveGNB(g)
}

func (a *AMF) isClosed() bool {
	a.life.RLock()
	defer a.life.RUnlock()
	return a.closed
}

// acquireWorker registers a UE executor goroutine; false after Close.
func (a *AMF) acquireWorker() bool {
	a.life.RLock()
	defer a.life.RUnlock()
	if a.closed {
		return false
	}
	a.workers.Add(1)
	return true
}

func (a *AMF) releaseWorker() { a.workers.Done() }

// Close stops listening, closes every association, stops all NAS timers and
// waits for every goroutine the AMF started. UE contexts are dropped without
// signalling (the AMF is going away).
func (a *AMF) Close() error {
	a.life.Lock()
	if a.closed {
		a.life.Unlock()
		return nil
	}
	a.closed = true
	ls := a.listeners
	gs := make([]*gnb, 0, len(a.gnbs))
	for g := range a.gnbs {
		gs = append(gs, g)
	}
	a.life.Unlock()
	a.cancel()
	var errs []error
	for _, l := range ls {
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close listener: %w", err))
		}
	}
	for _, g := range gs {
		g.conn.Close()
	}
	a.workers.Wait()
	// No executor runs any more (post refuses work after closed), so the
	// timers can be read safely; stopping them releases the runtime timers
	// now instead of letting them fire into a closed AMF.
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
	a.life.RLock()
	defer a.life.RUnlock()
	if len(a.listeners) == 0 {
		return ""
	}
	return a.listeners[0].Addr().String()
}

// Stats is a snapshot of the AMF's counters.
type Stats struct {
	RegisteredUEs       int64  // UEs in 5GMM-REGISTERED
	UEContexts          int64  // UE contexts held (registered or in a procedure)
	GNBs                int64  // associations with a successful NG Setup
	NGSetups            uint64 // NG Setup Responses sent
	NGSetupFailures     uint64
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
	Retransmissions     uint64 // NAS retransmissions on T3550/T3560/T3570 expiry
	ProcedureTimeouts   uint64 // procedures aborted after the last retransmission
	UEContextReleases   uint64 // UE Context Release Complete received
	PDUSessions         int64  // PDU sessions (SM contexts) the AMF holds
	SMContextsCreated   uint64 // successful Nsmf_PDUSession_CreateSMContext
	SMContextsRejected  uint64 // establishments refused by the SMF or not forwarded
	SMContextsReleased  uint64 // PDU sessions forgotten (SMF notify, AMF release)
	N1N2Transfers       uint64 // Namf_Communication_N1N2MessageTransfer accepted
}

type counters struct {
	registered, contexts, gnbs                      atomic.Int64
	ngSetups, ngSetupFailures                       atomic.Uint64
	registrations, regRejects                       atomic.Uint64
	auths, authFails, resyncs, smcs, idents, deregs atomic.Uint64
	errorIndications, nasDiscarded                  atomic.Uint64
	retransmissions, timeouts, releases             atomic.Uint64
	pduSessions                                     atomic.Int64
	smCreated, smRejected, smReleased, n1n2         atomic.Uint64
}

// Stats returns a snapshot of the counters.
func (a *AMF) Stats() Stats {
	c := &a.stats
	return Stats{
		RegisteredUEs:       c.registered.Load(),
		UEContexts:          c.contexts.Load(),
		GNBs:                c.gnbs.Load(),
		NGSetups:            c.ngSetups.Load(),
		NGSetupFailures:     c.ngSetupFailures.Load(),
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
		Retransmissions:     c.retransmissions.Load(),
		ProcedureTimeouts:   c.timeouts.Load(),
		UEContextReleases:   c.releases.Load(),
		PDUSessions:         c.pduSessions.Load(),
		SMContextsCreated:   c.smCreated.Load(),
		SMContextsRejected:  c.smRejected.Load(),
		SMContextsReleased:  c.smReleased.Load(),
		N1N2Transfers:       c.n1n2.Load(),
	}
}

// newUUID returns a random (version 4) UUID string for the NF instance id.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
