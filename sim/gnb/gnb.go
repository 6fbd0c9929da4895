// Package gnb is the simulator's gNB: one SCTP association to an AMF, NG
// Setup (TS 38.413 §8.7.1), and the UE-associated NGAP the UEs need: Initial
// UE Message, Uplink/Downlink NAS Transport, Initial Context Setup and UE
// Context Release (TS 38.413 §8.2, §8.6), PDU Session Resource Setup,
// Modify and Release (§8.2.1-§8.2.3), Paging (§8.5.1), the GTP-U end of
// N3 (TS 29.281) for its UEs' PDU sessions (n3.go, session.go), and Xn
// and N2 handover between the gNBs of the process (§8.4, handover.go).
//
// A UE's Port is its radio link: it stays the UE's while a handover
// moves it from one gNB to another. What a gNB keeps of a UE (the NGAP ID
// pair, the sessions' tunnels) is a leg; a handover leaves the source's
// leg without the UE until its forwarding ends.
//
// Paging: the gNB has no radio to broadcast on, so it keeps the 5G-S-TMSI
// each of its UEs listens for (Port.SetPagingIdentity) and hands a Paging
// whose TAI list holds the gNB's TAI to the UE it names, if that UE has no
// signalling connection (UE.HandlePaging).
//
// One reader goroutine per gNB receives every downlink message, routes it by
// RAN UE NGAP ID to the UE's Port and calls the UE synchronously; no
// goroutine is started per message or per UE. Uplink messages are sent from
// whichever goroutine calls a Port method, on the UE's SCTP stream (non-UE
// signalling uses stream 0, TS 38.412 §7).
package gnb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/udpstat"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// Config is one gNB.
type Config struct {
	AMFAddr   string
	Transport sctp.Config
	GNBID     uint32 // 22 bits
	Name      string // RAN node name; "" = "tern-gnb-<id>"
	PLMN      identity.PLMN
	TAC       uint32
	Slices    []identity.SNSSAI
	// CellID is the 36-bit NR cell identity; 0 = GNBID<<14 | 1.
	CellID uint64
	// SetupTimeout bounds NG Setup when the context has no deadline (default 5 s).
	SetupTimeout time.Duration
	// N3Addr is the local GTP-U address (TS 29.281) for the user plane,
	// "IP:port" with a specific IPv4 address: it is the DL tunnel address
	// given to the core (default DefaultN3Addr). A UPF sends downlink to
	// port 2152 of that address, so with a real UPF use port 2152 (e.g.
	// "10.100.3.1:2152" in the lab, "127.0.0.2:2152" beside a UPF on
	// 127.0.0.1).
	N3Addr string
	// N3PeerPort is the UDP port of the UPFs' N3 (default 2152); tests
	// point it at a fake UPF.
	N3PeerPort uint16
	// N3Tap, when set, sees every GTP-U datagram of this gNB (for pcap).
	N3Tap sctp.PacketTap
	// N3ReadBuffer is the N3 socket's receive buffer in bytes (0: the
	// system's default; beyond net.core.rmem_max only with
	// CAP_NET_ADMIN). Datagrams that find it full are dropped by the
	// kernel and counted in N3Socket's Drops.
	N3ReadBuffer int
	// OnMessage, when set, sees every NGAP message the gNB receives, after
	// the gNB has handled it (called on the reader goroutine). For tests.
	OnMessage func(ngap.Message)
	Logger    *slog.Logger

	// Handover (handover.go). ForwardBuffer bounds each buffer of a
	// session's downlink during a handover (default DefaultForwardBuffer,
	// a real gNB's order of magnitude): at the source, what waits for the
	// forwarding path; at the target, what is forwarded before the UE
	// arrives, and what the new path brings while the forwarded data is
	// still coming. Beyond it packets are dropped and counted.
	ForwardBuffer int
	// EndMarkerTimeout is how long a target holds the new path's downlink
	// waiting for the End Marker of the forwarded data (TS 38.300
	// §9.2.3.2.3 leaves the reordering to the target; default
	// DefaultEndMarkerTimeout). It runs from the first packet held.
	EndMarkerTimeout time.Duration
	// ForwardingTimeout bounds the forwarding at a source the UE has
	// left, once the handover is complete, when the End Marker of the old
	// path does not come (default DefaultForwardingTimeout).
	ForwardingTimeout time.Duration
	// HandoverInterruption is how long a UE this gNB hands over is
	// between cells: from the source letting it go (Handover Command; for
	// Xn, the handover decision) to its arrival at the target. It stands
	// for RRC reconfiguration and random access; the downlink meanwhile is
	// forwarded. Default 0.
	HandoverInterruption time.Duration
	// OnHandoverExecution, when set, is called when a UE this gNB hands
	// over by N2 got its Handover Command and leaves for the target:
	// inside the handover's execution window, before HandoverInterruption
	// and the target's Handover Notify. It runs on the handover's
	// goroutine and delays the UE's arrival by its own duration: a
	// benchmark's hook (tern bench failover kills the core there).
	OnHandoverExecution func()
}

// Handover defaults.
const (
	DefaultForwardBuffer     = 1024
	DefaultEndMarkerTimeout  = 100 * time.Millisecond
	DefaultForwardingTimeout = time.Second
)

// UE is the receiving end of a Port: *ue.UE implements it. The methods are
// called on the gNB's reader goroutine (HandleData on its N3 goroutine) and
// must not block for long.
type UE interface {
	HandleNAS(pdu []byte)
	// HandleRelease reports that the UE context was released; sentAt is
	// when UE Context Release Complete went out.
	HandleRelease(sentAt time.Time)
	// HandleContextSetup reports that the gNB answered an Initial Context
	// Setup Request: its Response went out at sentAt. It comes before the
	// setup reports of the request's PDU sessions (HandleSessionSetup) and
	// before the request's NAS PDU (HandleNAS).
	HandleContextSetup(sentAt time.Time)
	// HandlePaging hands over a Paging for the UE's 5G-S-TMSI while it has
	// no signalling connection; receivedAt is when the gNB received it.
	// The UE must not wait on the reader: it answers (Service Request) by
	// sending in place or from another goroutine.
	HandlePaging(receivedAt time.Time)
	// HandleSessionSetup reports the gNB's answer to the setup of PDU
	// session psi's resources: sentAt is when the PDU Session Resource
	// Setup Response (or Initial Context Setup Response) went out; err is
	// non-nil when the session was listed as failed (*SetupError).
	HandleSessionSetup(psi uint8, sentAt time.Time, err error)
	// HandleSessionReleased reports that session psi's resources were
	// released (PDU Session Resource Release Response sent at sentAt).
	HandleSessionReleased(psi uint8, sentAt time.Time)
	// HandleData delivers a downlink packet of session psi; called on the
	// gNB's N3 goroutine (around a handover also on the source's, or on a
	// timer's that ends the hold of the new path's packets). The UE must
	// not keep pkt.
	HandleData(psi uint8, pkt []byte)
}

// SetupFailureError is an NG Setup Failure from the AMF.
type SetupFailureError struct {
	Cause      ngap.Cause
	TimeToWait *ngap.TimeToWait
}

func (e *SetupFailureError) Error() string {
	return fmt.Sprintf("NG Setup Failure, cause %s", e.Cause)
}

// GNB is one connected gNB.
type GNB struct {
	cfg   Config
	n3    *n3
	log   *slog.Logger
	debug bool // log every NGAP message (checked first: logging allocates)
	uli   ngap.UserLocationNR

	// as is the association with the AMF now; Reconnect replaces it.
	as atomic.Pointer[assoc]
	// amf is the AMF's NG Setup Response; written by the NG Setup of Dial
	// and Reconnect, guarded by mu.
	amf ngap.NGSetupResponse
	// reconnectMu: one Reconnect at a time.
	reconnectMu sync.Mutex
	// resetAck receives the NG Reset Acknowledge of the gNB's own NG Reset
	// (TS 38.413 §8.7.4.2.1); nil when none is pending. Guarded by mu.
	resetAck chan *ngap.NGResetAcknowledge

	mu         sync.Mutex
	byRAN      map[int64]*leg
	bySTMSI    map[identity.STMSI]*Port // the paging identities of the ports
	nextRAN    int64
	neighbours map[uint32]*GNB // by gNB ID: the gNBs a UE can be handed to
	pending    map[string]*leg // N2 handover targets by token, until the UE arrives
	answer     HandoverAnswer  // how Handover Request is answered (tests)
	cancelCmd  bool            // cancel instead of executing a Handover Command (tests)
	hoCause    *ngap.Cause     // the cause of a refusal

	errorIndications atomic.Int64
	decodeErrors     atomic.Int64
	unknownUE        atomic.Int64
	pagings          atomic.Int64
	pagedUEs         atomic.Int64
	resets           atomic.Int64
	reconnects       atomic.Int64
	ho               hoCounters
}

// assoc is one SCTP association with the AMF, with its reader.
type assoc struct {
	conn    sctp.Conn
	streams uint16
	setupCh chan ngap.Message // NG Setup outcome, reader -> setup
	done    chan struct{}     // closed when the reader exits
	readErr error             // why the reader exited; read after done
}

func newAssoc(conn sctp.Conn) *assoc {
	return &assoc{conn: conn, streams: conn.OutboundStreams(), setupCh: make(chan ngap.Message, 1), done: make(chan struct{})}
}

// Dial connects to the AMF and runs NG Setup. On NG Setup Failure the
// error is a *SetupFailureError.
func Dial(ctx context.Context, cfg Config) (*GNB, error) {
	if err := cfg.PLMN.Validate(); err != nil {
		return nil, fmt.Errorf("gnb: plmn: %w", err)
	}
	if cfg.GNBID >= 1<<22 {
		return nil, fmt.Errorf("gnb: id %d: more than 22 bits", cfg.GNBID)
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("tern-gnb-%d", cfg.GNBID)
	}
	if cfg.CellID == 0 {
		cfg.CellID = uint64(cfg.GNBID)<<14 | 1
	}
	if cfg.SetupTimeout <= 0 {
		cfg.SetupTimeout = 5 * time.Second
	}
	if cfg.N3PeerPort == 0 {
		cfg.N3PeerPort = gtpu.Port
	}
	if cfg.ForwardBuffer <= 0 {
		cfg.ForwardBuffer = DefaultForwardBuffer
	}
	if cfg.EndMarkerTimeout <= 0 {
		cfg.EndMarkerTimeout = DefaultEndMarkerTimeout
	}
	if cfg.ForwardingTimeout <= 0 {
		cfg.ForwardingTimeout = DefaultForwardingTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("gnb", cfg.GNBID)
	ctx, cancel := context.WithTimeout(ctx, cfg.SetupTimeout)
	defer cancel()

	up, err := listenN3(cfg.N3Addr, cfg.N3Tap, cfg.N3ReadBuffer)
	if err != nil {
		return nil, fmt.Errorf("gnb %d: %w", cfg.GNBID, err)
	}
	conn, err := sctp.Dial(ctx, cfg.Transport, cfg.AMFAddr)
	if err != nil {
		up.conn.Close()
		return nil, fmt.Errorf("gnb %d: dial %s: %w", cfg.GNBID, cfg.AMFAddr, err)
	}
	g := &GNB{
		cfg:   cfg,
		n3:    up,
		log:   log,
		debug: log.Enabled(context.Background(), slog.LevelDebug),
		uli: ngap.UserLocationNR{
			NRCGI: ngap.NRCGI{PLMN: cfg.PLMN, CellID: cfg.CellID},
			TAI:   identity.TAI{PLMN: cfg.PLMN, TAC: cfg.TAC},
		},
		byRAN:      make(map[int64]*leg),
		bySTMSI:    make(map[identity.STMSI]*Port),
		nextRAN:    1,
		neighbours: make(map[uint32]*GNB),
		pending:    make(map[string]*leg),
	}
	a := newAssoc(conn)
	g.as.Store(a)
	go g.read(a)
	go up.serve(g)
	if err := g.setup(ctx, a); err != nil {
		conn.Close()
		<-a.done
		up.close()
		return nil, fmt.Errorf("gnb %d: %w", cfg.GNBID, err)
	}
	log.Info("NG Setup complete", "amf", g.AMF().AMFName)
	return g, nil
}

// setup sends NG Setup Request on stream 0 of a and waits for the outcome.
func (g *GNB) setup(ctx context.Context, a *assoc) error {
	req := &ngap.NGSetupRequest{
		GlobalRANNodeID: ngap.GlobalGNBID{PLMN: g.cfg.PLMN, GNBID: g.cfg.GNBID, BitLen: 22},
		RANNodeName:     g.cfg.Name,
		SupportedTAs: []ngap.SupportedTA{{
			TAC:            g.cfg.TAC,
			BroadcastPLMNs: []ngap.BroadcastPLMN{{PLMN: g.cfg.PLMN, Slices: g.cfg.Slices}},
		}},
		DefaultPagingDRX: ngap.PagingDRX128,
	}
	b, err := ngap.Encode(req)
	if err != nil {
		return fmt.Errorf("NG Setup Request: %w", err)
	}
	if err := a.conn.Send(0, ngap.PPID, b); err != nil {
		return fmt.Errorf("NG Setup Request: %w", err)
	}
	select {
	case m := <-a.setupCh:
		switch m := m.(type) {
		case *ngap.NGSetupResponse:
			g.mu.Lock()
			g.amf = *m
			g.mu.Unlock()
			return nil
		case *ngap.NGSetupFailure:
			return &SetupFailureError{Cause: m.Cause, TimeToWait: m.TimeToWait}
		}
		return fmt.Errorf("NG Setup: unexpected %T", m)
	case <-a.done:
		return fmt.Errorf("NG Setup: association ended: %w", a.readErr)
	case <-ctx.Done():
		return fmt.Errorf("NG Setup: %w", ctx.Err())
	}
}

// AMF returns the AMF's NG Setup Response (the last one, after Reconnect).
func (g *GNB) AMF() ngap.NGSetupResponse {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.amf
}

// ID returns the gNB ID.
func (g *GNB) ID() uint32 { return g.cfg.GNBID }

// Done is closed when the current association is gone; Err then says
// why. After Reconnect it is the new association's.
func (g *GNB) Done() <-chan struct{} { return g.as.Load().done }

// Err returns why the current association ended (nil while it is up).
func (g *GNB) Err() error {
	a := g.as.Load()
	select {
	case <-a.done:
		return a.readErr
	default:
		return nil
	}
}

// Close ends the association and the N3 endpoint and waits for their
// readers to stop. Not concurrently with Reconnect.
func (g *GNB) Close() error {
	a := g.as.Load()
	err := a.conn.Close()
	<-a.done
	g.n3.close()
	return err
}

// N3Addr returns the bound N3 (GTP-U) address.
func (g *GNB) N3Addr() netip.AddrPort { return g.n3.Addr() }

// N3Socket returns the kernel's counters of the N3 socket: the datagrams
// it dropped (receive buffer full) and the bytes it holds unread.
func (g *GNB) N3Socket() (udpstat.Counters, error) { return udpstat.Read(g.n3.conn) }

// N3Counters returns the user-plane counters.
func (g *GNB) N3Counters() N3Counters {
	n := g.n3
	return N3Counters{
		Uplink: n.uplink.Load(), Downlink: n.downlink.Load(),
		UnknownTEID: n.unknownTEID.Load(), TEIDs: n.teids.Load(), Malformed: n.malformed.Load(),
		EchoRequests: n.echoes.Load(), ErrorIndications: n.errorIndications.Load(),
		SendErrors: n.sendErrors.Load(),
	}
}

// Counters are what the gNB saw that was not routine; for tests.
type Counters struct {
	ErrorIndications int64 // Error Indications received
	DecodeErrors     int64 // downlink PDUs that did not decode
	UnknownUE        int64 // UE-associated messages for no known RAN UE NGAP ID
	Pagings          int64 // Paging messages received
	PagedUEs         int64 // Pagings handed to an idle UE of this gNB
	Resets           int64 // NG Resets received or sent
	Reconnects       int64 // associations replaced by Reconnect
	Handover         HandoverCounters
}

// Counters returns the gNB's counters.
func (g *GNB) Counters() Counters {
	return Counters{
		ErrorIndications: g.errorIndications.Load(),
		DecodeErrors:     g.decodeErrors.Load(),
		UnknownUE:        g.unknownUE.Load(),
		Pagings:          g.pagings.Load(),
		PagedUEs:         g.pagedUEs.Load(),
		Resets:           g.resets.Load(),
		Reconnects:       g.reconnects.Load(),
		Handover:         g.ho.snapshot(),
	}
}

// TAI returns the tracking area the gNB serves.
func (g *GNB) TAI() identity.TAI { return g.uli.TAI }

// SendRaw puts data on the association as an NGAP message as it is; for
// tests that feed the AMF garbled PDUs.
func (g *GNB) SendRaw(stream uint16, data []byte) error {
	return g.as.Load().conn.Send(stream, ngap.PPID, data)
}

// ueStream picks the SCTP stream for UE-associated signalling: any stream
// but 0, fixed per RAN UE NGAP ID so that one UE's messages stay in order.
func (g *GNB) ueStream(ranID int64) uint16 {
	n := g.as.Load().streams
	if n <= 1 {
		return 0
	}
	return uint16(1 + ranID%int64(n-1))
}

func (g *GNB) send(stream uint16, m ngap.Message) error {
	if g.debug {
		g.log.Debug("NGAP send", "msg", fmt.Sprintf("%T", m), "stream", stream, "ids", ueIDs(m))
	}
	b, err := ngap.Encode(m)
	if err != nil {
		return fmt.Errorf("encode %T: %w", m, err)
	}
	return g.as.Load().conn.Send(stream, ngap.PPID, b)
}

// sendTimed is send, returning the instant just before the SCTP send.
func (g *GNB) sendTimed(stream uint16, m ngap.Message) (time.Time, error) {
	if g.debug {
		g.log.Debug("NGAP send", "msg", fmt.Sprintf("%T", m), "stream", stream, "ids", ueIDs(m))
	}
	b, err := ngap.Encode(m)
	if err != nil {
		return time.Time{}, fmt.Errorf("encode %T: %w", m, err)
	}
	t := time.Now()
	return t, g.as.Load().conn.Send(stream, ngap.PPID, b)
}

// Port is one UE's radio link: the UE's attachment to the gNB that serves
// it (or that it camps on in CM-IDLE). A UE has at most one signalling
// connection (one RAN UE NGAP ID) at a time. A handover (handover.go) moves
// the Port to another gNB: the UE keeps its Port, and the gNB that served
// it keeps what it needs of the old connection (its forwarding) without
// the UE.
type Port struct {
	ue  UE
	cur atomic.Pointer[leg] // the gNB side of the UE now
	// hoMu: one handover at a time.
	hoMu sync.Mutex
	// stmsi is the paging identity (guarded by mu; ok = set), held in the
	// bySTMSI map of stmsiAt.
	mu      sync.Mutex
	stmsi   identity.STMSI
	stmsiOK bool
	stmsiAt *GNB
}

// leg is one gNB's side of a UE: its UE-associated signalling connection
// (the NGAP ID pair) and the AN resources of its PDU sessions. The leg of
// the gNB serving the UE is its Port's current one. A handover leaves legs
// without a UE: at the source, until its forwarding ends, and at an N2
// target, from Handover Request until the UE arrives.
type leg struct {
	g     *GNB
	port  atomic.Pointer[Port] // the UE's port while the UE is here; nil otherwise
	ranID atomic.Int64         // 0 = no signalling connection
	amfID atomic.Int64         // -1 = not yet known
	// secCap are the UE security capabilities from Initial Context Setup
	// or Handover Request (for Path Switch Request); guarded by g.mu.
	secCap ngap.UESecurityCapabilities
	// sessions: AN resources by PDU session ID (index 0 unused); written
	// on the NGAP reader (or by a handover), read by SendData.
	sessions [16]atomic.Pointer[session]
	// handover state (handover.go), guarded by g.mu
	n2  *n2Source    // this leg is the source of an N2 handover
	tgt *n2Target    // this leg is the target of an N2 handover, before the UE arrives
	psr chan psrDone // this leg waits for the outcome of its Path Switch Request
}

func (g *GNB) newLeg() *leg {
	l := &leg{g: g}
	l.amfID.Store(-1)
	return l
}

// ue returns the UE the leg serves, nil if the UE is not here.
func (l *leg) ue() UE {
	if p := l.port.Load(); p != nil {
		return p.ue
	}
	return nil
}

// NewPort attaches u to the gNB; pass the Port to the UE (ue.UE.Attach).
func (g *GNB) NewPort(u UE) *Port {
	p := &Port{ue: u}
	l := g.newLeg()
	l.port.Store(p)
	p.cur.Store(l)
	return p
}

// GNB returns the gNB the UE is attached to now.
func (p *Port) GNB() *GNB { return p.cur.Load().g }

// ServingTAI returns the tracking area of the gNB the UE is attached to.
func (p *Port) ServingTAI() identity.TAI { return p.GNB().TAI() }

// RANUENGAPID returns the current RAN UE NGAP ID, 0 if none.
func (p *Port) RANUENGAPID() int64 { return p.cur.Load().ranID.Load() }

// AMFUENGAPID returns the AMF UE NGAP ID learnt from the AMF, -1 if none.
func (p *Port) AMFUENGAPID() int64 { return p.cur.Load().amfID.Load() }

// SetPagingIdentity sets the 5G-S-TMSI the UE answers Paging for (from its
// 5G-GUTI); nil: none. A 5G-S-TMSI belongs to one port of the gNB: the
// port that sets it last.
func (p *Port) SetPagingIdentity(stmsi *identity.STMSI) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setPagingLocked(p.cur.Load().g, stmsi)
}

// setPagingLocked (p.mu held) registers stmsi (nil: none) with g, removing
// the old identity from the gNB that held it.
func (p *Port) setPagingLocked(g *GNB, stmsi *identity.STMSI) {
	if old := p.stmsiAt; old != nil {
		old.mu.Lock()
		if p.stmsiOK && old.bySTMSI[p.stmsi] == p {
			delete(old.bySTMSI, p.stmsi)
		}
		old.mu.Unlock()
	}
	p.stmsiOK, p.stmsiAt = stmsi != nil, nil
	if stmsi != nil {
		p.stmsi, p.stmsiAt = *stmsi, g
		g.mu.Lock()
		g.bySTMSI[*stmsi] = p
		g.mu.Unlock()
	}
}

// movePaging moves the paging identity to g (after a handover).
func (p *Port) movePaging(g *GNB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stmsiOK || p.stmsiAt == g {
		return
	}
	s := p.stmsi
	p.setPagingLocked(g, &s)
}

// SendInitial allocates a RAN UE NGAP ID and sends InitialUEMessage
// (TS 38.413 §8.6.1) with the RRC establishment cause the UE gave and its
// 5G-S-TMSI (nil: none).
func (p *Port) SendInitial(nasPDU []byte, cause ngap.RRCEstablishmentCause, stmsi *identity.STMSI) (time.Time, error) {
	l := p.cur.Load()
	g := l.g
	g.mu.Lock()
	if old := l.ranID.Load(); old != 0 && g.byRAN[old] == l {
		delete(g.byRAN, old)
	}
	id := g.allocRANLocked(l)
	g.mu.Unlock()
	l.ranID.Store(id)
	l.amfID.Store(-1)
	l.releaseSessions() // a new connection starts without AN resources

	m := &ngap.InitialUEMessage{
		RANUENGAPID:           id,
		NASPDU:                nasPDU,
		UserLocation:          g.uli,
		RRCEstablishmentCause: cause,
		FiveGSTMSI:            stmsi,
		UEContextRequest:      true,
	}
	t, err := g.sendTimed(g.ueStream(id), m)
	if err != nil {
		l.forget(id)
		return t, fmt.Errorf("gnb %d: initial UE message: %w", g.cfg.GNBID, err)
	}
	return t, nil
}

// allocRANLocked (g.mu held) gives l a fresh RAN UE NGAP ID.
func (g *GNB) allocRANLocked(l *leg) int64 {
	for {
		id := g.nextRAN
		g.nextRAN++
		if g.nextRAN > 1<<32-1 {
			g.nextRAN = 1
		}
		if _, busy := g.byRAN[id]; !busy {
			g.byRAN[id] = l
			return id
		}
	}
}

// SendUplink sends Uplink NAS Transport (TS 38.413 §8.6.3).
func (p *Port) SendUplink(nasPDU []byte) (time.Time, error) {
	l := p.cur.Load()
	g := l.g
	ran, amf := l.ranID.Load(), l.amfID.Load()
	if ran == 0 || amf < 0 {
		return time.Time{}, fmt.Errorf("gnb %d: uplink NAS: no signalling connection with the AMF", g.cfg.GNBID)
	}
	m := &ngap.UplinkNASTransport{AMFUENGAPID: amf, RANUENGAPID: ran, NASPDU: nasPDU, UserLocation: g.uli}
	t, err := g.sendTimed(g.ueStream(ran), m)
	if err != nil {
		return t, fmt.Errorf("gnb %d: uplink NAS: %w", g.cfg.GNBID, err)
	}
	return t, nil
}

// RequestRelease asks the AMF to release the UE context (TS 38.413 §8.3.2,
// cause user inactivity: the AN release that takes a UE to CM-IDLE). The
// connection stays until the AMF's UE Context Release Command.
func (p *Port) RequestRelease() (time.Time, error) {
	l := p.cur.Load()
	g := l.g
	ran, amf := l.ranID.Load(), l.amfID.Load()
	if ran == 0 || amf < 0 {
		return time.Time{}, fmt.Errorf("gnb %d: release request: no signalling connection with the AMF", g.cfg.GNBID)
	}
	req := &ngap.UEContextReleaseRequest{
		AMFUENGAPID: amf, RANUENGAPID: ran,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity},
	}
	t, err := g.sendTimed(g.ueStream(ran), req)
	if err != nil {
		return t, fmt.Errorf("gnb %d: release request: %w", g.cfg.GNBID, err)
	}
	return t, nil
}

// Drop forgets the UE's signalling connection, asking the AMF to release
// its side with UE Context Release Request (TS 38.413 §8.3.2, cause
// radio connection with UE lost) when the AMF UE NGAP ID is known.
func (p *Port) Drop() { p.cur.Load().drop() }

// drop is Drop for one leg.
func (l *leg) drop() {
	ran, amf := l.ranID.Load(), l.amfID.Load()
	if ran == 0 {
		return
	}
	l.forget(ran)
	if amf >= 0 {
		req := &ngap.UEContextReleaseRequest{
			AMFUENGAPID: amf, RANUENGAPID: ran,
			Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkRadioConnectionWithUELost},
		}
		if err := l.g.send(l.g.ueStream(ran), req); err != nil {
			l.g.log.Warn("UE context release request", "ran_ue_ngap_id", ran, "err", err)
		}
	}
}

// forget removes RAN UE NGAP ID id from the gNB if it is still l's.
func (l *leg) forget(id int64) {
	g := l.g
	g.mu.Lock()
	if g.byRAN[id] == l {
		delete(g.byRAN, id)
	}
	g.mu.Unlock()
	if l.ranID.CompareAndSwap(id, 0) {
		l.releaseSessions()
	}
}

func (g *GNB) leg(ranID int64) *leg {
	g.mu.Lock()
	l := g.byRAN[ranID]
	g.mu.Unlock()
	return l
}

func (g *GNB) legByAMFID(amfID int64) *leg {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range g.byRAN {
		if l.amfID.Load() == amfID {
			return l
		}
	}
	return nil
}

// ueLeg finds the leg of a UE-associated message by its RAN UE NGAP ID,
// noting the AMF UE NGAP ID; an unknown one gets Error Indication.
func (g *GNB) ueLeg(amf, ran int64, stream uint16) *leg {
	l := g.leg(ran)
	if l == nil {
		g.unknownUEMessage(amf, ran, stream)
		return nil
	}
	l.amfID.Store(amf)
	return l
}

// read is the receiving goroutine of association a: the gNB's only one
// while a is its association.
func (g *GNB) read(a *assoc) {
	defer close(a.done)
	setupDone := false
	// sctp.Serve runs the handler on the transport's receive goroutine
	// where it can, saving a goroutine handoff per message.
	a.readErr = sctp.Serve(a.conn, func(msg sctp.Message) {
		at := time.Now() // the receiving instant (the paging window starts here)
		if msg.PPID != ngap.PPID {
			g.log.Debug("non-NGAP message ignored", "ppid", msg.PPID)
			return
		}
		m, err := ngap.Decode(msg.Data)
		if err != nil {
			g.decodeErrors.Add(1)
			g.log.Warn("undecodable NGAP PDU", "err", err)
			var de *ngap.DecodeError
			if errors.As(err, &de) && de.Notify {
				// TS 38.413 §10: tell the AMF what we could not read.
				if ei := de.ErrorIndication(); ei != nil {
					if err := g.send(msg.Stream, ei); err != nil {
						g.log.Warn("error indication", "err", err)
					}
				}
			}
			return
		}
		if !setupDone {
			switch m.(type) {
			case *ngap.NGSetupResponse, *ngap.NGSetupFailure:
				setupDone = true
				a.setupCh <- m
				return
			}
		}
		g.dispatch(m, msg.Stream, at)
		if g.cfg.OnMessage != nil {
			g.cfg.OnMessage(m)
		}
	})
}

func (g *GNB) dispatch(m ngap.Message, stream uint16, at time.Time) {
	if g.debug {
		g.log.Debug("NGAP recv", "msg", fmt.Sprintf("%T", m), "stream", stream, "ids", ueIDs(m))
	}
	switch m := m.(type) {
	case *ngap.DownlinkNASTransport:
		l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
		if l == nil {
			return
		}
		if u := l.ue(); u != nil {
			u.HandleNAS(m.NASPDU)
		} else {
			g.log.Debug("downlink NAS for a UE that has left", "ran_ue_ngap_id", m.RANUENGAPID)
		}
	case *ngap.InitialContextSetupRequest:
		l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
		if l == nil {
			return
		}
		g.mu.Lock()
		l.secCap = m.UESecurityCapabilities
		g.mu.Unlock()
		u := l.ue()
		// TS 38.413 §8.3.1.2: set up the PDU sessions (if any), pass the
		// NAS-PDUs and answer; without sessions the context is established
		// at once, and the NAS PDU then goes to the UE.
		ok, failed, results := g.setupItems(l, m.PDUSessionResourceSetupItems)
		resp := &ngap.InitialContextSetupResponse{
			AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID,
			PDUSessionResourceSetupItems: ok, PDUSessionResourceFailedItems: failed,
		}
		if u != nil {
			for _, it := range m.PDUSessionResourceSetupItems {
				if it.NASPDU != nil && results[it.ID] == nil {
					u.HandleNAS(it.NASPDU)
				}
			}
		}
		t, err := g.sendTimed(g.ueStream(m.RANUENGAPID), resp)
		if err != nil {
			g.log.Warn("initial context setup response", "err", err)
		} else if u != nil {
			u.HandleContextSetup(t)
		}
		if u != nil {
			if len(results) > 0 {
				g.reportSetup(u, results, t, err)
			}
			if m.NASPDU != nil {
				u.HandleNAS(m.NASPDU)
			}
		}
	case *ngap.UEContextReleaseCommand:
		var l *leg
		if m.AMFIDOnly {
			l = g.legByAMFID(m.AMFUENGAPID)
		} else {
			l = g.leg(m.RANUENGAPID)
		}
		ran := m.RANUENGAPID
		var released []uint8
		if l != nil {
			ran = l.ranID.Load()
			released = l.releaseSessions()
			l.forget(ran)
			g.legReleased(l, m.Cause)
		}
		// TS 38.413 §8.3.3.2: always confirm, even for a UE we no longer
		// know, listing the PDU sessions whose resources went with it.
		resp := &ngap.UEContextReleaseComplete{AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: ran, PDUSessionIDs: released}
		t, err := g.sendTimed(g.ueStream(ran), resp)
		if err != nil {
			g.log.Warn("UE context release complete", "err", err)
		}
		if l != nil {
			l.amfID.Store(-1)
			if u := l.ue(); u != nil {
				u.HandleRelease(t)
			}
		}
	case *ngap.Paging:
		g.onPaging(m, at)
	case *ngap.PDUSessionResourceSetupRequest:
		g.onSetupRequest(m, stream)
	case *ngap.PDUSessionResourceModifyRequest:
		g.onModifyRequest(m, stream)
	case *ngap.PDUSessionResourceReleaseCommand:
		g.onReleaseCommand(m, stream)
	case *ngap.HandoverCommand:
		g.onHandoverCommand(m, stream, at)
	case *ngap.HandoverPreparationFailure:
		g.onHandoverPreparationFailure(m, stream)
	case *ngap.HandoverCancelAcknowledge:
		g.onHandoverCancelAcknowledge(m, stream)
	case *ngap.HandoverRequest:
		g.onHandoverRequest(m, stream)
	case *ngap.DownlinkRANStatusTransfer:
		g.onDownlinkRANStatusTransfer(m, stream)
	case *ngap.PathSwitchRequestAcknowledge:
		g.onPathSwitchAcknowledge(m, stream, at)
	case *ngap.PathSwitchRequestFailure:
		g.onPathSwitchFailure(m, stream, at)
	case *ngap.NGReset:
		g.onNGReset(m)
	case *ngap.NGResetAcknowledge:
		g.onNGResetAcknowledge(m)
	case *ngap.ErrorIndication:
		g.errorIndications.Add(1)
		attrs := make([]any, 0, 6)
		if m.Cause != nil {
			attrs = append(attrs, "cause", m.Cause.String())
		}
		if m.AMFUENGAPID != nil {
			attrs = append(attrs, "amf_ue_ngap_id", *m.AMFUENGAPID)
		}
		if m.RANUENGAPID != nil {
			attrs = append(attrs, "ran_ue_ngap_id", *m.RANUENGAPID)
		}
		g.log.Warn("error indication from AMF", attrs...)
	default:
		g.log.Debug("NGAP message not handled", "type", fmt.Sprintf("%T", m))
	}
}

// onPaging hands a Paging (TS 38.413 §8.5.1) to the idle UE it names when
// the gNB's TAI is in its TAI List for Paging. A UE with a signalling
// connection is not paged (the AMF pages only UEs in CM-IDLE; one that
// already answered is on its way).
func (g *GNB) onPaging(m *ngap.Paging, at time.Time) {
	g.pagings.Add(1)
	tai := g.uli.TAI
	here := false
	for _, t := range m.TAIListForPaging {
		if t == tai {
			here = true
			break
		}
	}
	if !here {
		g.log.Debug("paging for other tracking areas", "tais", len(m.TAIListForPaging))
		return
	}
	g.mu.Lock()
	p := g.bySTMSI[m.UEPagingIdentity]
	g.mu.Unlock()
	if p == nil || p.RANUENGAPID() != 0 {
		g.log.Debug("paging for no idle UE of this gNB", "tmsi", m.UEPagingIdentity.TMSI, "known", p != nil)
		return
	}
	g.pagedUEs.Add(1)
	p.ue.HandlePaging(at)
}

func (g *GNB) unknownUEMessage(amf, ran int64, stream uint16) {
	g.unknownUE.Add(1)
	g.log.Warn("message for unknown RAN UE NGAP ID", "ran_ue_ngap_id", ran, "amf_ue_ngap_id", amf)
	// TS 38.413 §10.6: inconsistent/unknown UE NGAP ID -> Error Indication.
	cause := ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnknownLocalUENGAPID}
	ei := &ngap.ErrorIndication{AMFUENGAPID: &amf, RANUENGAPID: &ran, Cause: &cause}
	if err := g.send(stream, ei); err != nil {
		g.log.Warn("error indication", "err", err)
	}
}

// ueIDs formats the UE NGAP IDs of m for debug logs: "amf/ran".
func ueIDs(m ngap.Message) string {
	switch v := m.(type) {
	case *ngap.InitialUEMessage:
		return fmt.Sprintf("-/%d", v.RANUENGAPID)
	case *ngap.DownlinkNASTransport:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.UplinkNASTransport:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.InitialContextSetupRequest:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.InitialContextSetupResponse:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.UEContextReleaseRequest:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.UEContextReleaseCommand:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.UEContextReleaseComplete:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceSetupRequest:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceSetupResponse:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceModifyRequest:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceModifyResponse:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceReleaseCommand:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	case *ngap.PDUSessionResourceReleaseResponse:
		return fmt.Sprintf("%d/%d", v.AMFUENGAPID, v.RANUENGAPID)
	}
	return ""
}
