package gnb

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/ngap"
)

// Handover (TS 38.300 §9.2.3, TS 23.502 §4.9.1, TS 38.413 §8.4): the gNB
// side of Xn and N2 handover. The gNBs of a process are each other's
// neighbours (Neighbours); the radio between them is in-process: a UE's
// Port moves from the source's leg to the target's.
//
// N2 (Port.HandoverN2, from the caller's goroutine): the source sends
// HANDOVER REQUIRED with a token in the Source to Target Transparent
// Container and waits. The target answers HANDOVER REQUEST with its new
// RAN UE NGAP ID and, per session, a DL tunnel and a DL forwarding tunnel
// (or HANDOVER FAILURE), keeping the leg under the token. On HANDOVER
// COMMAND (the reader) the UE stops being served by the source: each
// session's downlink goes to the forwarding tunnel the command names, as
// a G-PDU with a DL PDU Session Container and the session's QFI, through a
// bounded buffer, and the source sends UPLINK RAN STATUS TRANSFER; the
// caller then takes the UE to the target, which matches the token, takes
// the UE and sends HANDOVER NOTIFY. The source forwards until the End
// Marker of the old path (passed on to the forwarding tunnel) or, after
// its UE Context Release, ForwardingTimeout.
//
// Xn (Port.HandoverXn): the source hands the UE context to the target
// in-process (the sessions' UL tunnels and QoS flows, the AMF UE NGAP ID);
// the target allocates DL tunnels, takes the UE at once and sends PATH
// SWITCH REQUEST; the source forwards the downlink it still receives to
// the target in-process (Xn-U) until the UPF's End Marker on the old path,
// then forgets the UE without NGAP. On PATH SWITCH REQUEST ACKNOWLEDGE the
// target takes the new AMF UE NGAP ID; on PATH SWITCH REQUEST FAILURE it
// releases the UE.
//
// At the target, the forwarded downlink goes to the UE first; what comes
// on the new path is held until the End Marker arrives through the
// forwarding path, or EndMarkerTimeout after the first held packet (the
// data then goes in order as far as the forwarding ended within that
// bound). A session without forwarding (the SMF's smart buffering: no
// forwarding tunnel in the command) gets the new path's packets at once.
// Every buffer is bounded by ForwardBuffer; drops are counted.

// HandoverAnswer is how a gNB answers HANDOVER REQUEST; for tests.
type HandoverAnswer uint8

const (
	// HandoverAccept admits the sessions it can (the default).
	HandoverAccept HandoverAnswer = iota
	// HandoverRefuse answers HANDOVER FAILURE.
	HandoverRefuse
	// HandoverIgnore does not answer (the AMF's guard timer decides).
	HandoverIgnore
)

// SetHandoverAnswer sets how the gNB answers HANDOVER REQUEST from now on;
// cause is the refusal's (nil: no radio resources available in target).
func (g *GNB) SetHandoverAnswer(a HandoverAnswer, cause *ngap.Cause) {
	g.mu.Lock()
	g.answer, g.hoCause = a, cause
	g.mu.Unlock()
}

// CancelHandovers makes the gNB, as an N2 source, answer each HANDOVER
// COMMAND with HANDOVER CANCEL (TS 38.413 §8.4.6) instead of letting the
// UE go: the UE stays, HandoverN2 returns ErrHandoverCancelled. For tests.
func (g *GNB) CancelHandovers(on bool) {
	g.mu.Lock()
	g.cancelCmd = on
	g.mu.Unlock()
}

// Neighbours makes the gNBs each other's neighbours: a UE of one can be
// handed to any other (the neighbour relation of TS 38.300 §15.3, and the
// Xn between them).
func Neighbours(gs ...*GNB) {
	for _, a := range gs {
		for _, b := range gs {
			if a != b {
				a.mu.Lock()
				a.neighbours[b.cfg.GNBID] = b
				a.mu.Unlock()
			}
		}
	}
}

func (g *GNB) neighbour(id uint32) *GNB {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.neighbours[id]
}

// Handover errors.
var (
	ErrHandoverCancelled = errors.New("gnb: handover cancelled by the source (Handover Cancel)")
	ErrNotConnected      = errors.New("gnb: handover: the UE has no signalling connection with the AMF")
	ErrNoUserPlane       = errors.New("gnb: handover: the UE has no PDU session with AN resources")
	ErrHandoverBusy      = errors.New("gnb: handover: another one is running for the UE")
	ErrTargetUnreachable = errors.New("gnb: handover: the UE could not reach the target (no admitted Handover Request for it)")
	ErrReleased          = errors.New("gnb: handover: the UE's connection was released")
)

// HandoverError is the network's refusal of a handover: Handover
// Preparation Failure (N2) or Path Switch Request Failure (Xn).
type HandoverError struct {
	Message string // "Handover Preparation Failure" or "Path Switch Request Failure"
	Cause   *ngap.Cause
}

func (e *HandoverError) Error() string {
	if e.Cause == nil {
		return "gnb: " + e.Message
	}
	return fmt.Sprintf("gnb: %s, cause %s", e.Message, e.Cause)
}

// UnknownNeighbourError names a target the source does not know.
type UnknownNeighbourError struct{ GNBID uint32 }

func (e *UnknownNeighbourError) Error() string {
	return fmt.Sprintf("gnb: handover: gNB %d is not a neighbour", e.GNBID)
}

// HandoverCounters count a gNB's part in handovers.
type HandoverCounters struct {
	// N2 as source: Handover Required sent, Handover Notify sent for them
	// (the UE left), Handover Preparation Failures, cancels.
	N2Started, N2Completed, N2PreparationFailures, N2Cancelled int64
	// N2 as target: Handover Requests admitted and refused.
	N2Admitted, N2Refused int64
	// Xn as target: Path Switch Requests sent, acknowledged, failed.
	PathSwitches, PathSwitchAcks, PathSwitchFailures int64
	// Downlink forwarding at the source: G-PDUs forwarded (N2: to the
	// forwarding tunnel; Xn: to the target in-process); dropped (buffer
	// full, no forwarding path, or after the End Marker); End Markers
	// passed on.
	Forwarded, ForwardDropped, EndMarkersForwarded int64
	// At the target: G-PDUs received on DL forwarding tunnels (N2); the
	// new path's packets held behind the forwarded data, and dropped
	// (buffer full); forwarded packets buffered before the UE arrived;
	// forwarded packets that came after the hold had ended (possibly out
	// of order); holds ended by EndMarkerTimeout instead of an End
	// Marker.
	ForwardedReceived, Held, HeldDropped, EarlyForwarded, LateForwarded, HoldTimeouts int64
	// End Markers received on N3 (either tunnel).
	EndMarkers int64
	// Downlink RAN Status Transfers received (their content is ignored).
	RANStatusTransfers int64
}

type hoCounters struct {
	n2Started, n2Completed, n2PrepFailures, n2Cancelled atomic.Int64
	n2Admitted, n2Refused                               atomic.Int64
	psrSent, psrAcks, psrFailures                       atomic.Int64
	forwarded, fwdDropped, endMarkersForwarded          atomic.Int64
	fwdReceived, held, heldDropped, early, late         atomic.Int64
	holdTimeouts, endMarkers, ranStatus                 atomic.Int64
}

func (c *hoCounters) snapshot() HandoverCounters {
	return HandoverCounters{
		N2Started: c.n2Started.Load(), N2Completed: c.n2Completed.Load(),
		N2PreparationFailures: c.n2PrepFailures.Load(), N2Cancelled: c.n2Cancelled.Load(),
		N2Admitted: c.n2Admitted.Load(), N2Refused: c.n2Refused.Load(),
		PathSwitches: c.psrSent.Load(), PathSwitchAcks: c.psrAcks.Load(), PathSwitchFailures: c.psrFailures.Load(),
		Forwarded: c.forwarded.Load(), ForwardDropped: c.fwdDropped.Load(), EndMarkersForwarded: c.endMarkersForwarded.Load(),
		ForwardedReceived: c.fwdReceived.Load(), Held: c.held.Load(), HeldDropped: c.heldDropped.Load(),
		EarlyForwarded: c.early.Load(), LateForwarded: c.late.Load(), HoldTimeouts: c.holdTimeouts.Load(),
		EndMarkers: c.endMarkers.Load(), RANStatusTransfers: c.ranStatus.Load(),
	}
}

// n2Source is the N2 handover a source leg runs.
type n2Source struct {
	token  []byte
	target *GNB
	out    chan n2Outcome // capacity 2: the command, then a cancel's acknowledgement
	cmd    bool           // a Handover Command was taken
}

type n2Outcome struct {
	fwd map[uint8]bool // the sessions whose downlink is forwarded
	err error
}

func (h *n2Source) report(o n2Outcome) {
	select {
	case h.out <- o:
	default:
	}
}

// n2Target is a target leg waiting for its UE.
type n2Target struct{ token string }

// psrDone is the outcome of a Path Switch Request.
type psrDone struct {
	at  time.Time
	err error
}

// ---- the UE's side: the procedures, run from the caller's goroutine ----

// HandoverN2 hands the UE to neighbour gNB target by N2 handover and
// returns when the target has sent HANDOVER NOTIFY (the UE is then served
// by the target), or the handover failed with the UE on the source
// (*HandoverError for Handover Preparation Failure, ErrHandoverCancelled,
// ErrTargetUnreachable, ...). start is when HANDOVER REQUIRED went out,
// end when HANDOVER NOTIFY did (each just before the SCTP send).
func (p *Port) HandoverN2(ctx context.Context, target uint32) (start, end time.Time, err error) {
	p.hoMu.Lock()
	defer p.hoMu.Unlock()
	l, tg, srcs, err := p.handoverFrom(target)
	if err != nil {
		return start, end, err
	}
	g := l.g
	ran, amf := l.ranID.Load(), l.amfID.Load()
	tr, err := ngap.EncodeHandoverRequiredTransfer(&ngap.HandoverRequiredTransfer{})
	if err != nil {
		return start, end, err
	}
	items := make([]ngap.PDUSessionResourceItem, len(srcs))
	for i, s := range srcs {
		items[i] = ngap.PDUSessionResourceItem{ID: s.id, Transfer: tr}
	}
	ho := &n2Source{token: newToken(), target: tg, out: make(chan n2Outcome, 2)}
	container, err := g.sourceToTarget(ho.token, tg)
	if err != nil {
		return start, end, err
	}
	g.mu.Lock()
	if l.n2 != nil {
		g.mu.Unlock()
		return start, end, ErrHandoverBusy
	}
	l.n2 = ho
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if l.n2 == ho {
			l.n2 = nil
		}
		g.mu.Unlock()
	}()
	req := &ngap.HandoverRequired{
		AMFUENGAPID: amf, RANUENGAPID: ran,
		HandoverType: ngap.HandoverIntra5GS,
		Cause:        ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
		TargetID: ngap.TargetRANNodeID{
			GlobalGNBID: ngap.GlobalGNBID{PLMN: tg.cfg.PLMN, GNBID: tg.cfg.GNBID, BitLen: 22},
			SelectedTAI: tg.TAI(),
		},
		Sessions:                           items,
		SourceToTargetTransparentContainer: container,
	}
	start, err = g.sendTimed(g.ueStream(ran), req)
	if err != nil {
		return start, end, fmt.Errorf("gnb %d: handover required: %w", g.cfg.GNBID, err)
	}
	g.ho.n2Started.Add(1)
	var o n2Outcome
	select {
	case o = <-ho.out:
	case <-ctx.Done():
		// TNGRELOCprep: give the handover up (TS 38.413 §8.4.1.2).
		g.cancelHandover(l, ngap.RadioNetworkTNGRELOCprepExpiry)
		return start, end, fmt.Errorf("gnb %d: handover preparation: %w", g.cfg.GNBID, ctx.Err())
	case <-g.Done():
		return start, end, fmt.Errorf("gnb %d: handover: association ended: %w", g.cfg.GNBID, g.Err())
	}
	if o.err != nil {
		return start, end, o.err
	}
	// The RRC handover command goes to the UE behind the downlink already
	// queued for it: what reached the source before the command is
	// delivered before the UE leaves. Sessions with a forwarding tunnel
	// would forward it anyway; those without (the UPF holds their
	// downlink) would lose it.
	if len(o.fwd) < len(items) && !g.n3.flush(flushTimeout) {
		g.log.Warn("handover: the N3 reader did not catch up before the UE left")
	}
	// The UE executes the handover: it goes to the target with the token
	// (the RRC part, in-process).
	if f := g.cfg.OnHandoverExecution; f != nil {
		f()
	}
	if d := g.cfg.HandoverInterruption; d > 0 {
		time.Sleep(d)
	}
	tl := tg.arrival(ho.token)
	if tl == nil {
		// It could not get there: it comes back, and the source gives
		// the handover up (TS 38.413 §8.4.6).
		for i := range l.sessions {
			if s := l.sessions[i].Load(); s != nil {
				s.stopForward()
			}
		}
		g.cancelHandover(l, ngap.RadioNetworkHOFailureInTarget)
		select {
		case <-ho.out: // the Cancel Acknowledge
		case <-ctx.Done():
		case <-g.Done():
		}
		return start, end, ErrTargetUnreachable
	}
	p.moveTo(l, tl)
	u := p.ue
	for i := range tl.sessions {
		if s := tl.sessions[i].Load(); s != nil {
			if r := s.reo.Load(); r != nil {
				r.arrive(o.fwd[s.id])
			}
		}
	}
	// Sessions the target did not admit lost their user plane.
	now := time.Now()
	for i := range l.sessions {
		if s := l.sessions[i].Load(); s != nil && tl.sessions[i].Load() == nil {
			u.HandleSessionReleased(s.id, now)
		}
	}
	notify := &ngap.HandoverNotify{AMFUENGAPID: tl.amfID.Load(), RANUENGAPID: tl.ranID.Load(), UserLocation: tg.uli}
	end, err = tg.sendTimed(tg.ueStream(notify.RANUENGAPID), notify)
	if err != nil {
		return start, end, fmt.Errorf("gnb %d: handover notify: %w", tg.cfg.GNBID, err)
	}
	g.ho.n2Completed.Add(1)
	return start, end, nil
}

// handoverFrom checks that the UE can be handed to neighbour target and
// returns its serving leg, the target and the sessions to move (at least
// one). p.hoMu held.
func (p *Port) handoverFrom(target uint32) (*leg, *GNB, []*session, error) {
	l := p.cur.Load()
	if ran, amf := l.ranID.Load(), l.amfID.Load(); ran == 0 || amf < 0 {
		return nil, nil, nil, ErrNotConnected
	}
	tg := l.g.neighbour(target)
	if tg == nil {
		return nil, nil, nil, &UnknownNeighbourError{GNBID: target}
	}
	var srcs []*session
	for i := range l.sessions {
		if s := l.sessions[i].Load(); s != nil {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		// TS 38.413 §9.2.3.1, §9.2.3.8: Handover Required and Path Switch
		// Request list at least one PDU session.
		return nil, nil, nil, ErrNoUserPlane
	}
	return l, tg, srcs, nil
}

// flushTimeout bounds the wait for the N3 reader before a UE leaves.
const flushTimeout = 100 * time.Millisecond

// cancelHandover sends HANDOVER CANCEL for the source leg l.
func (g *GNB) cancelHandover(l *leg, cause uint8) {
	ran, amf := l.ranID.Load(), l.amfID.Load()
	if ran == 0 || amf < 0 {
		return
	}
	g.ho.n2Cancelled.Add(1)
	c := &ngap.HandoverCancel{AMFUENGAPID: amf, RANUENGAPID: ran, Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: cause}}
	if err := g.send(g.ueStream(ran), c); err != nil {
		g.log.Warn("handover cancel", "err", err)
	}
}

// HandoverXn hands the UE to neighbour gNB target by Xn handover and
// returns when the target got PATH SWITCH REQUEST ACKNOWLEDGE; the UE is
// then served by the target. On PATH SWITCH REQUEST FAILURE
// (*HandoverError) the target releases the UE (it goes to CM-IDLE at the
// target). start is when the Path Switch Request went out (just before the
// SCTP send), end when its acknowledgement was received.
func (p *Port) HandoverXn(ctx context.Context, target uint32) (start, end time.Time, err error) {
	p.hoMu.Lock()
	defer p.hoMu.Unlock()
	l, tg, srcs, err := p.handoverFrom(target)
	if err != nil {
		return start, end, err
	}
	g := l.g
	ran, amf := l.ranID.Load(), l.amfID.Load()
	g.mu.Lock()
	if l.n2 != nil {
		g.mu.Unlock()
		return start, end, ErrHandoverBusy
	}
	secCap := l.secCap
	g.mu.Unlock()
	// The UE leaves the source: its downlink waits for the Xn-U path.
	fws := make([]*forwarder, len(srcs))
	for i, s := range srcs {
		fws[i] = s.startForward()
	}
	// The target takes the UE context.
	tl := tg.newLeg()
	var items []ngap.PDUSessionResourceItem
	for _, s := range srcs {
		ts := &session{id: s.id, leg: tl, ambr: s.ambr}
		ts.setUL(s.uplink().tunnel, tg.cfg.N3PeerPort)
		ts.qfis = slices.Clone(s.qfis)
		ts.qfi.Store(s.qfi.Load())
		tg.n3.allocTEID(ts)
		ts.reo.Store(&reorder{s: ts})
		tl.sessions[s.id].Store(ts)
		b, err := ngap.EncodePathSwitchRequestTransfer(&ngap.PathSwitchRequestTransfer{
			DLTunnel: ngap.GTPTunnel{Addr: tg.n3.ip, TEID: ts.dlTEID}, QoSFlows: slices.Clone(ts.qfis),
		})
		if err != nil {
			return start, end, err
		}
		items = append(items, ngap.PDUSessionResourceItem{ID: s.id, Transfer: b})
	}
	done := make(chan psrDone, 1)
	tg.mu.Lock()
	tl.secCap = secCap
	tl.psr = done
	ran2 := tg.allocRANLocked(tl)
	tg.mu.Unlock()
	tl.ranID.Store(ran2)
	for i, s := range srcs {
		fws[i].attach(&xnDest{t: tl.sessions[s.id].Load()})
	}
	// The UE reaches the target (the Xn-U forwarding runs meanwhile).
	if d := g.cfg.HandoverInterruption; d > 0 {
		time.Sleep(d)
	}
	p.moveTo(l, tl)
	for i := range tl.sessions {
		if s := tl.sessions[i].Load(); s != nil {
			if r := s.reo.Load(); r != nil {
				r.arrive(true)
			}
		}
	}
	req := &ngap.PathSwitchRequest{
		RANUENGAPID: ran2, SourceAMFUENGAPID: amf, UserLocation: tg.uli,
		UESecurityCapabilities: secCap, ToBeSwitched: items,
	}
	start, err = tg.sendTimed(tg.ueStream(ran2), req)
	if err == nil {
		tg.ho.psrSent.Add(1)
		select {
		case d := <-done:
			err = d.err
			end = d.at
		case <-ctx.Done():
			err = fmt.Errorf("gnb %d: path switch: %w", tg.cfg.GNBID, ctx.Err())
		case <-tg.Done():
			err = fmt.Errorf("gnb %d: path switch: association ended: %w", tg.cfg.GNBID, tg.Err())
		}
	} else {
		err = fmt.Errorf("gnb %d: path switch request: %w", tg.cfg.GNBID, err)
	}
	if err != nil {
		// The target releases the UE (TS 38.413 §8.4.4.3); the source has
		// lost it and asks the AMF to release its connection.
		tg.mu.Lock()
		tl.psr = nil
		tg.mu.Unlock()
		tl.forget(ran2)
		tl.amfID.Store(-1)
		l.drop()
		p.ue.HandleRelease(time.Now())
		return start, end, err
	}
	// The source forgets the UE without NGAP (the Xn UE Context Release):
	// its sessions go once the old path's End Marker has been passed on.
	l.forget(ran)
	return start, end, nil
}

// moveTo makes the UE's port leave leg src for dst.
func (p *Port) moveTo(src, dst *leg) {
	dst.port.Store(p)
	p.cur.Store(dst)
	src.port.CompareAndSwap(p, nil)
	p.movePaging(dst.g)
}

// arrival is the UE reaching the target with the token of its Handover
// Request: the target leg, nil if there is none (refused, released, or
// the target is gone).
func (g *GNB) arrival(token []byte) *leg {
	if g.Err() != nil {
		return nil
	}
	g.mu.Lock()
	l := g.pending[string(token)]
	delete(g.pending, string(token))
	if l != nil {
		l.tgt = nil
	}
	g.mu.Unlock()
	if l == nil || l.ranID.Load() == 0 {
		return nil
	}
	return l
}

// legReleased ends what a released leg had running.
func (g *GNB) legReleased(l *leg, cause ngap.Cause) {
	g.mu.Lock()
	if l.tgt != nil {
		if g.pending[l.tgt.token] == l {
			delete(g.pending, l.tgt.token)
		}
		l.tgt = nil
	}
	ho, psr := l.n2, l.psr
	l.psr = nil
	g.mu.Unlock()
	if ho != nil {
		ho.report(n2Outcome{err: fmt.Errorf("%w (cause %s)", ErrReleased, cause)})
	}
	if psr != nil {
		psr <- psrDone{err: fmt.Errorf("%w (cause %s)", ErrReleased, cause)}
	}
}

// newToken is the handover's identity between source and target.
func newToken() []byte {
	b := make([]byte, 12)
	copy(b, "tern")
	rand.Read(b[4:])
	return b
}

// sourceToTarget builds the Source NG-RAN Node to Target NG-RAN Node
// Transparent Container (TS 38.413 §9.3.1.29): its RRC container (for the
// RRC HandoverPreparationInformation, TS 38.331) carries the token, the
// target cell and the UE history (the source cell) are real.
func (g *GNB) sourceToTarget(token []byte, tg *GNB) ([]byte, error) {
	cgi := func(x *GNB) (*ie.NGRANCGI, error) {
		b := x.cfg.PLMN.Bytes()
		c := x.cfg.CellID << 4 // 36 bits, left aligned in 5 octets
		return &ie.NGRANCGI{Choice: &ie.NRCGI{
			PLMNIdentity: &ie.PLMNIdentity{Value: aper.OctetString(b[:])},
			NRCellIdentity: &ie.NRCellIdentity{Value: aper.BitString{
				Bytes: []byte{byte(c >> 32), byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)}, BitLength: 36,
			}},
		}}, nil
	}
	target, err := cgi(tg)
	if err != nil {
		return nil, err
	}
	source, err := cgi(g)
	if err != nil {
		return nil, err
	}
	c := &ie.SourceNGRANNodeToTargetNGRANNodeTransparentContainer{
		RRCContainer: &ie.RRCContainer{Value: aper.OctetString(token)},
		TargetCellID: target,
		UEHistoryInformation: &ie.UEHistoryInformation{List: []ie.LastVisitedCellItem{{
			LastVisitedCellInformation: &ie.LastVisitedCellInformation{Choice: &ie.LastVisitedNGRANCellInformation{
				GlobalCellID:       source,
				CellType:           &ie.CellType{CellSize: &ie.CellSize{Value: ie.CellSizePresentSmall}},
				TimeUEStayedInCell: &ie.TimeUEStayedInCell{Value: 10},
			}},
		}}},
	}
	return ie.MarshalBinary(c)
}

// tokenOf reads the token from a Source to Target Transparent Container;
// nil if it has none.
func tokenOf(b []byte) []byte {
	var c ie.SourceNGRANNodeToTargetNGRANNodeTransparentContainer
	if err := ie.UnmarshalBinary(b, &c); err != nil || c.RRCContainer == nil {
		return nil
	}
	return bytes.Clone(c.RRCContainer.Value)
}

// targetToSource is the Target NG-RAN Node to Source NG-RAN Node
// Transparent Container (TS 38.413 §9.3.1.30): its RRC container stands
// for the RRC HandoverCommand and carries the token back.
func targetToSource(token []byte) ([]byte, error) {
	if len(token) == 0 {
		token = []byte{0}
	}
	return ie.MarshalBinary(&ie.TargetNGRANNodeToSourceNGRANNodeTransparentContainer{
		RRCContainer: &ie.RRCContainer{Value: aper.OctetString(token)},
	})
}

// ---- NGAP handlers (the reader) ----

// onHandoverCommand: the target admitted the UE (TS 38.413 §8.4.1.2). The
// UE leaves: each session's downlink goes to its forwarding tunnel (none:
// dropped, the UPF holds it), and the source sends Uplink RAN Status
// Transfer for the forwarded ones (§8.4.7).
func (g *GNB) onHandoverCommand(m *ngap.HandoverCommand, stream uint16, at time.Time) {
	l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
	if l == nil {
		return
	}
	g.mu.Lock()
	ho, cancel := l.n2, g.cancelCmd
	if ho != nil {
		if ho.cmd {
			ho = nil
		} else {
			ho.cmd = true
		}
	}
	g.mu.Unlock()
	if ho == nil {
		g.log.Warn("handover command without a handover", "ran_ue_ngap_id", m.RANUENGAPID)
		return
	}
	if cancel {
		g.cancelHandover(l, ngap.RadioNetworkHandoverCancelled)
		return // the outcome comes with the Cancel Acknowledge
	}
	o := n2Outcome{fwd: map[uint8]bool{}}
	var drbs []ngap.DRBStatus
	for _, it := range m.Handover {
		s := l.session(it.ID)
		if s == nil {
			continue
		}
		t, err := ngap.DecodeHandoverCommandTransfer(it.Transfer)
		if err != nil {
			g.log.Warn("handover command transfer", "psi", it.ID, "err", err)
			continue
		}
		if t.DLForwardingTunnel == nil || !t.DLForwardingTunnel.Addr.Is4() {
			// No forwarding (the UPF holds the downlink): what still
			// comes, sent before that, goes to the UE until it has left.
			continue
		}
		s.startForward().attach(&udpDest{n: g.n3, g: g, to: netip.AddrPortFrom(t.DLForwardingTunnel.Addr, g.cfg.N3PeerPort),
			teid: t.DLForwardingTunnel.TEID, qfi: uint8(s.qfi.Load())})
		o.fwd[it.ID] = true
		// One DRB per session in the simulator; PDCP COUNTs start at 0.
		drbs = append(drbs, ngap.DRBStatus{DRBID: it.ID, UL: ngap.COUNTValue{SNLength: 18}, DL: ngap.COUNTValue{SNLength: 18}})
	}
	if len(drbs) > 0 {
		st := &ngap.UplinkRANStatusTransfer{AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID, DRBs: drbs}
		if err := g.send(g.ueStream(m.RANUENGAPID), st); err != nil {
			g.log.Warn("uplink RAN status transfer", "err", err)
		}
	}
	ho.report(o)
}

func (l *leg) session(id uint8) *session {
	if id == 0 || id > 15 {
		return nil
	}
	return l.sessions[id].Load()
}

// onHandoverPreparationFailure: the UE stays (TS 38.413 §8.4.1.3).
func (g *GNB) onHandoverPreparationFailure(m *ngap.HandoverPreparationFailure, stream uint16) {
	l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
	if l == nil {
		return
	}
	g.ho.n2PrepFailures.Add(1)
	g.mu.Lock()
	ho := l.n2
	g.mu.Unlock()
	if ho != nil {
		c := m.Cause
		ho.report(n2Outcome{err: &HandoverError{Message: "Handover Preparation Failure", Cause: &c}})
	}
}

// onHandoverCancelAcknowledge ends a cancelled handover (TS 38.413
// §8.4.6.2): the UE stays, its downlink is the source's again.
func (g *GNB) onHandoverCancelAcknowledge(m *ngap.HandoverCancelAcknowledge, stream uint16) {
	l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
	if l == nil {
		return
	}
	g.mu.Lock()
	ho := l.n2
	g.mu.Unlock()
	if ho != nil {
		ho.report(n2Outcome{err: ErrHandoverCancelled})
	}
}

// onHandoverRequest admits a UE coming by N2 handover (TS 38.413 §8.4.2):
// a RAN UE NGAP ID, per session a DL tunnel and a DL forwarding tunnel,
// the leg kept under the token of the Source to Target Transparent
// Container until the UE arrives.
func (g *GNB) onHandoverRequest(m *ngap.HandoverRequest, stream uint16) {
	g.mu.Lock()
	answer, cause := g.answer, g.hoCause
	g.mu.Unlock()
	refuse := func(c ngap.Cause) {
		g.ho.n2Refused.Add(1)
		f := &ngap.HandoverFailure{AMFUENGAPID: m.AMFUENGAPID, Cause: c}
		if err := g.send(stream, f); err != nil {
			g.log.Warn("handover failure", "err", err)
		}
	}
	switch answer {
	case HandoverIgnore:
		return
	case HandoverRefuse:
		c := ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkNoRadioResourcesAvailableInTarget}
		if cause != nil {
			c = *cause
		}
		refuse(c)
		return
	}
	token := tokenOf(m.SourceToTargetTransparentContainer)
	l := g.newLeg()
	l.amfID.Store(m.AMFUENGAPID)
	var admitted, failed []ngap.PDUSessionResourceItem
	var firstCause *ngap.Cause
	fail := func(id uint8, c ngap.Cause) {
		if firstCause == nil {
			firstCause = &c
		}
		b, err := ngap.EncodeHandoverResourceAllocationUnsuccessfulTransfer(&ngap.HandoverResourceAllocationUnsuccessfulTransfer{Cause: c})
		if err != nil {
			g.log.Error("encode handover resource allocation unsuccessful transfer", "err", err)
		}
		failed = append(failed, ngap.PDUSessionResourceItem{ID: id, Transfer: b})
	}
	for _, it := range m.Sessions {
		if it.ID == 0 || it.ID > 15 || l.sessions[it.ID].Load() != nil {
			fail(it.ID, ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkMultiplePDUSessionIDInstances})
			continue
		}
		s, c := g.newSession(l, it.ID, it.Transfer)
		if c != nil {
			fail(it.ID, *c)
			continue
		}
		g.n3.allocTEID(s)
		g.n3.allocFwdTEID(s)
		s.reo.Store(&reorder{s: s})
		flows := make([]ngap.QoSFlowWithDataForwarding, len(s.qfis))
		for i, q := range s.qfis {
			flows[i] = ngap.QoSFlowWithDataForwarding{QFI: q, DataForwardingAccepted: true}
		}
		b, err := ngap.EncodeHandoverRequestAcknowledgeTransfer(&ngap.HandoverRequestAcknowledgeTransfer{
			DLTunnel:           ngap.GTPTunnel{Addr: g.n3.ip, TEID: s.dlTEID},
			DLForwardingTunnel: &ngap.GTPTunnel{Addr: g.n3.ip, TEID: s.fwdTEID},
			QoSFlows:           flows,
		})
		if err != nil {
			g.n3.freeTEID(s)
			g.log.Error("encode handover request acknowledge transfer", "err", err)
			fail(it.ID, ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnspecified})
			continue
		}
		l.sessions[it.ID].Store(s)
		admitted = append(admitted, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: b})
	}
	if len(admitted) == 0 {
		l.releaseSessions()
		c := ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHOFailureInTarget}
		if firstCause != nil {
			c = *firstCause
		}
		refuse(c)
		return
	}
	t2s, err := targetToSource(token)
	if err != nil {
		l.releaseSessions()
		refuse(ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnspecified})
		return
	}
	g.mu.Lock()
	l.secCap = m.UESecurityCapabilities
	ran := g.allocRANLocked(l)
	if old := g.pending[string(token)]; old != nil {
		old.tgt = nil // a repeated request: the newer leg wins
	}
	l.tgt = &n2Target{token: string(token)}
	g.pending[string(token)] = l
	g.mu.Unlock()
	l.ranID.Store(ran)
	ack := &ngap.HandoverRequestAcknowledge{
		AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: ran,
		Admitted: admitted, FailedToSetup: failed,
		TargetToSourceTransparentContainer: t2s,
	}
	if err := g.send(g.ueStream(ran), ack); err != nil {
		g.log.Warn("handover request acknowledge", "err", err)
	}
	g.ho.n2Admitted.Add(1)
}

// onDownlinkRANStatusTransfer takes the source's PDCP status (TS 38.413
// §8.4.8); the simulator has no PDCP, so the content is not used.
func (g *GNB) onDownlinkRANStatusTransfer(m *ngap.DownlinkRANStatusTransfer, stream uint16) {
	if g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream) == nil {
		return
	}
	g.ho.ranStatus.Add(1)
}

// onPathSwitchAcknowledge: the AMF switched the UE to this gNB (TS 38.413
// §8.4.4.2): the new AMF UE NGAP ID, the UL tunnels, the sessions it
// released.
func (g *GNB) onPathSwitchAcknowledge(m *ngap.PathSwitchRequestAcknowledge, stream uint16, at time.Time) {
	l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
	if l == nil {
		return
	}
	g.ho.psrAcks.Add(1)
	if m.UESecurityCapabilities != nil {
		g.mu.Lock()
		l.secCap = *m.UESecurityCapabilities
		g.mu.Unlock()
	}
	for _, it := range m.Switched {
		s := l.session(it.ID)
		if s == nil {
			continue
		}
		t, err := ngap.DecodePathSwitchRequestAcknowledgeTransfer(it.Transfer)
		if err != nil {
			g.log.Warn("path switch request acknowledge transfer", "psi", it.ID, "err", err)
			continue
		}
		if t.ULTunnel != nil && t.ULTunnel.Addr.Is4() && *t.ULTunnel != s.uplink().tunnel {
			s.setUL(*t.ULTunnel, g.cfg.N3PeerPort)
		}
	}
	u := l.ue()
	for _, it := range m.Released {
		if s := l.session(it.ID); s != nil && l.sessions[it.ID].CompareAndSwap(s, nil) {
			s.free()
			if u != nil {
				u.HandleSessionReleased(it.ID, at)
			}
		}
	}
	g.mu.Lock()
	ch := l.psr
	l.psr = nil
	g.mu.Unlock()
	if ch != nil {
		ch <- psrDone{at: at}
	}
}

// onPathSwitchFailure: the AMF could not switch the UE (TS 38.413
// §8.4.4.3); HandoverXn releases it.
func (g *GNB) onPathSwitchFailure(m *ngap.PathSwitchRequestFailure, stream uint16, at time.Time) {
	l := g.leg(m.RANUENGAPID)
	if l == nil {
		g.unknownUEMessage(m.AMFUENGAPID, m.RANUENGAPID, stream)
		return
	}
	g.ho.psrFailures.Add(1)
	g.mu.Lock()
	ch := l.psr
	l.psr = nil
	g.mu.Unlock()
	if ch != nil {
		ch <- psrDone{at: at, err: &HandoverError{Message: "Path Switch Request Failure"}}
	}
}

// ---- the downlink during a handover ----

// downlink takes one downlink packet of s (pkt is the reader's buffer):
// put in order while a handover to this gNB completes, then to the UE,
// or to the forwarding once the UE has left. fromFwd: it came on the DL
// forwarding tunnel.
func (s *session) downlink(pkt []byte, fromFwd bool) {
	if r := s.reo.Load(); r != nil {
		r.push(pkt, fromFwd)
		return
	}
	s.deliver(pkt)
}

// deliver hands pkt to the UE, or to the forwarding if the UE has left.
func (s *session) deliver(pkt []byte) {
	if f := s.fwd.Load(); f != nil {
		f.push(pkt)
		return
	}
	u := s.leg.ue()
	if u == nil {
		// A source the UE left without a forwarding path.
		s.leg.g.ho.fwdDropped.Add(1)
		return
	}
	s.leg.g.n3.downlink.Add(1)
	u.HandleData(s.id, pkt)
}

// endMarker: the End Marker on s's DL tunnel (TS 29.281 §7.3.2). What a
// handover to this gNB still holds goes before it.
func (s *session) endMarker() {
	f := s.fwd.Load()
	if f == nil {
		return
	}
	if r := s.reo.Load(); r != nil {
		r.drain()
	}
	f.endMarker()
}

// fwdEndMarker: the End Marker of the forwarded data (on the DL forwarding
// tunnel, or from the Xn source): the new path's packets may go.
func (s *session) fwdEndMarker() {
	if r := s.reo.Load(); r != nil {
		r.endMarker()
	}
	s.leg.g.n3.freeFwdTEID(s)
}

// startForward makes the UE leave the session at this gNB: its downlink
// is held (bounded) until a forwarding path is attached.
func (s *session) startForward() *forwarder {
	f := &forwarder{s: s, g: s.leg.g}
	if !s.fwd.CompareAndSwap(nil, f) {
		return s.fwd.Load()
	}
	return f
}

// stopForward: the UE is back (a failed handover execution): what was
// held goes to it, and the session serves it again.
func (s *session) stopForward() {
	f := s.fwd.Load()
	if f == nil {
		return
	}
	f.mu.Lock()
	q := f.q
	f.q, f.ended = nil, true
	if f.timer != nil {
		f.timer.Stop()
	}
	s.fwd.Store(nil)
	for _, p := range q {
		s.deliver(p)
	}
	f.mu.Unlock()
}

// forwarder is the downlink of a session whose UE left this gNB (the
// source of a handover).
type forwarder struct {
	s      *session
	g      *GNB
	mu     sync.Mutex
	to     fwdDest  // nil: hold
	q      [][]byte // held until to is set
	endq   bool     // the End Marker came while holding: it follows q
	ended  bool     // the End Marker has been passed on: nothing more goes
	closed bool     // the session was released: free it when ended
	timer  *time.Timer
}

// fwdDest is where a forwarder sends.
type fwdDest interface {
	forward(pkt []byte) bool
	endMarker()
}

func (f *forwarder) push(pkt []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.ended, f.endq:
		f.g.ho.fwdDropped.Add(1)
	case f.to == nil:
		if len(f.q) >= f.g.cfg.ForwardBuffer {
			f.g.ho.fwdDropped.Add(1)
			return
		}
		f.q = append(f.q, bytes.Clone(pkt))
	case f.to.forward(pkt):
		f.g.ho.forwarded.Add(1)
	default:
		f.g.ho.fwdDropped.Add(1)
	}
}

// attach sets the forwarding path and sends what was held, in order (and
// the End Marker, if it came meanwhile).
func (f *forwarder) attach(to fwdDest) {
	f.mu.Lock()
	if f.ended || f.to != nil {
		f.mu.Unlock()
		return
	}
	f.to = to
	for _, p := range f.q {
		if to.forward(p) {
			f.g.ho.forwarded.Add(1)
		} else {
			f.g.ho.fwdDropped.Add(1)
		}
	}
	f.q = nil
	if !f.endq {
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.endMarker()
}

// endMarker: the old path's last packet went; the End Marker follows the
// forwarded data. A released session goes now.
func (f *forwarder) endMarker() {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	if f.to == nil {
		// Still holding: the End Marker goes after what is held, once
		// the forwarding path is there.
		f.endq = true
		f.mu.Unlock()
		return
	}
	f.ended = true
	f.to.endMarker()
	f.g.ho.endMarkersForwarded.Add(1)
	if f.timer != nil {
		f.timer.Stop()
	}
	closed := f.closed
	f.mu.Unlock()
	if closed {
		f.finish()
	}
}

// close: the session is released at this gNB. It reports whether the
// forwarder still runs (it frees the session when the End Marker came, or
// after ForwardingTimeout).
func (f *forwarder) close() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return true
	}
	f.closed = true
	if f.ended {
		return false
	}
	f.timer = time.AfterFunc(f.g.cfg.ForwardingTimeout, f.expire)
	return true
}

// expire: no End Marker came; the forwarding ends, and the target stops
// waiting for it.
func (f *forwarder) expire() {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.ended = true
	if f.to != nil {
		if x, ok := f.to.(*xnDest); ok {
			x.t.fwdEndMarker()
		}
	}
	f.mu.Unlock()
	f.finish()
}

// finish frees the session's tunnel at this gNB.
func (f *forwarder) finish() {
	f.g.n3.freeTEID(f.s)
}

// udpDest forwards to an N2 DL forwarding tunnel (the UPF's indirect
// forwarding F-TEID).
type udpDest struct {
	n    *n3
	g    *GNB
	to   netip.AddrPort
	teid uint32
	qfi  uint8
	buf  []byte // guarded by the forwarder's mu
}

func (d *udpDest) forward(pkt []byte) bool {
	// TS 38.415 §5.5.2.1: DL PDU SESSION INFORMATION with the session's QFI.
	d.buf = gtpu.AppendGPDU(d.buf[:0], d.teid, d.qfi, true, pkt)
	return d.n.sendTo(d.buf, d.to) == nil
}

func (d *udpDest) endMarker() {
	d.buf = gtpu.AppendEndMarker(d.buf[:0], d.teid)
	if err := d.n.sendTo(d.buf, d.to); err != nil {
		d.g.log.Warn("end marker to the forwarding tunnel", "err", err)
	}
}

// xnDest forwards to the target's session in-process (for Xn-U).
type xnDest struct{ t *session }

func (d *xnDest) forward(pkt []byte) bool {
	d.t.leg.g.ho.fwdReceived.Add(1)
	d.t.downlink(pkt, true)
	return true
}

func (d *xnDest) endMarker() { d.t.fwdEndMarker() }

// reorder puts a target session's downlink in order during a handover:
// forwarded packets first, then the new path's.
type reorder struct {
	s       *session
	mu      sync.Mutex
	arrived bool     // the UE is here
	fwd     bool     // forwarded data is coming: hold the new path until its End Marker
	ended   bool     // the forwarded data ended (End Marker, or EndMarkerTimeout)
	stopped bool     // the session is gone
	early   [][]byte // forwarded before the UE arrived
	held    [][]byte // the new path's, behind the forwarded data
	timer   *time.Timer
}

func (r *reorder) push(pkt []byte, fromFwd bool) {
	g := r.s.leg.g
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopped:
	case fromFwd && !r.arrived:
		if len(r.early) >= g.cfg.ForwardBuffer {
			g.ho.heldDropped.Add(1)
			return
		}
		g.ho.early.Add(1)
		r.early = append(r.early, bytes.Clone(pkt))
	case fromFwd:
		if r.ended {
			g.ho.late.Add(1)
		}
		r.s.deliver(pkt)
	case r.arrived && (r.ended || !r.fwd) && len(r.held) == 0:
		r.s.deliver(pkt)
	default:
		if len(r.held) >= g.cfg.ForwardBuffer {
			g.ho.heldDropped.Add(1)
			return
		}
		g.ho.held.Add(1)
		r.held = append(r.held, bytes.Clone(pkt))
		r.armLocked()
	}
}

// armLocked starts EndMarkerTimeout when new-path data waits for an End
// Marker.
func (r *reorder) armLocked() {
	if r.arrived && r.fwd && !r.ended && r.timer == nil && len(r.held) > 0 {
		r.timer = time.AfterFunc(r.s.leg.g.cfg.EndMarkerTimeout, r.timeout)
	}
}

// arrive: the UE is here; fwd says whether the source forwards.
func (r *reorder) arrive(fwd bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrived, r.fwd = true, fwd
	for _, p := range r.early {
		r.s.deliver(p)
	}
	r.early = nil
	if !fwd {
		// Nothing is forwarded (no forwarding tunnel in the command).
		r.s.leg.g.n3.freeFwdTEID(r.s)
	}
	if r.ended || !fwd {
		r.flushLocked()
		return
	}
	r.armLocked()
}

// drain ends the reordering at once: the UE is leaving this gNB again
// before it ended, and the End Marker of the next old path follows what
// it holds. Late forwarded packets go on to the forwarding until the
// forwarding tunnel goes.
func (r *reorder) drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.ended = true
	for _, p := range r.early {
		r.s.deliver(p)
	}
	r.early = nil
	r.flushLocked()
	s := r.s
	time.AfterFunc(s.leg.g.cfg.ForwardingTimeout, func() { s.leg.g.n3.freeFwdTEID(s) })
}

func (r *reorder) endMarker() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.arrived {
		for _, p := range r.early {
			r.s.deliver(p)
		}
		r.early = nil
		r.flushLocked()
	}
}

func (r *reorder) timeout() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.stopped {
		return
	}
	r.ended = true
	r.s.leg.g.ho.holdTimeouts.Add(1)
	for _, p := range r.held {
		r.s.deliver(p)
	}
	r.held = nil
	// Forwarded packets may still come (counted late) until the
	// forwarding tunnel goes.
	s := r.s
	time.AfterFunc(s.leg.g.cfg.ForwardingTimeout, func() {
		s.reo.CompareAndSwap(r, nil)
		s.leg.g.n3.freeFwdTEID(s)
	})
}

// flushLocked delivers the held packets and ends the reordering: from
// now on the session's downlink goes straight to the UE.
func (r *reorder) flushLocked() {
	for _, p := range r.held {
		r.s.deliver(p)
	}
	r.held = nil
	r.s.reo.CompareAndSwap(r, nil)
}

// stop: the session is released.
func (r *reorder) stop() {
	r.mu.Lock()
	r.stopped = true
	r.early, r.held = nil, nil
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
}
