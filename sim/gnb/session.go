package gnb

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/ngap"
)

// PDU session resource management (TS 38.413 §8.2): the gNB keeps, per UE
// and PDU session, the UPF's UL tunnel, its own DL tunnel (a TEID on the
// N3 socket) and the QoS flows. It has no radio to configure, so a session
// fails to set up only for protocol reasons (undecodable transfer,
// duplicate ID, a non-IPv4 tunnel or session type, no QoS flow).

// session is one PDU session's AN resources at one gNB.
type session struct {
	id     uint8
	leg    *leg
	ulp    atomic.Pointer[ulEnd] // the UPF's tunnel end (a path switch may change it)
	dlTEID uint32
	// fwdTEID is the DL forwarding tunnel of an N2 handover target (0 =
	// none).
	fwdTEID uint32
	// fwd is set at a source the UE leaves: the downlink goes there
	// instead of to the UE (handover.go).
	fwd atomic.Pointer[forwarder]
	// reo is set at a target while the forwarded and the new path's
	// downlink are put in order (handover.go).
	reo atomic.Pointer[reorder]
	// qfi marks uplink G-PDUs: the first QoS flow set up (the default
	// flow). The simulated UE does no per-packet QoS rule matching.
	qfi atomic.Uint32
	// Guarded by being touched only on the NGAP reader goroutine.
	qfis []uint8
	ambr *ngap.AMBR
}

// ulEnd is a session's UL tunnel and where its G-PDUs go.
type ulEnd struct {
	tunnel ngap.GTPTunnel
	peer   netip.AddrPort
}

func (s *session) uplink() *ulEnd { return s.ulp.Load() }

func (s *session) setUL(t ngap.GTPTunnel, port uint16) {
	s.ulp.Store(&ulEnd{tunnel: t, peer: netip.AddrPortFrom(t.Addr, port)})
}

// ErrNoSession is returned by SendData for a PDU session the gNB has no
// resources for.
var ErrNoSession = errors.New("gnb: no AN resources for the PDU session")

// SessionInfo describes one PDU session's AN resources; for tests.
type SessionInfo struct {
	ID       uint8
	UL       ngap.GTPTunnel // the UPF's tunnel end
	DL       ngap.GTPTunnel // ours
	QoSFlows []uint8
}

// SendData encapsulates one uplink IP packet of PDU session psi in GTP-U
// and sends it to the UPF (the ue.Link method).
func (p *Port) SendData(psi uint8, pkt []byte) error {
	if psi == 0 || psi > 15 {
		return ErrNoSession
	}
	s := p.cur.Load().sessions[psi].Load()
	if s == nil {
		return ErrNoSession
	}
	return s.leg.g.n3.send(s, pkt)
}

// Sessions returns the UE's PDU sessions with AN resources.
func (p *Port) Sessions() []SessionInfo {
	l := p.cur.Load()
	var out []SessionInfo
	for i := range l.sessions {
		if s := l.sessions[i].Load(); s != nil {
			out = append(out, SessionInfo{
				ID: s.id, UL: s.uplink().tunnel,
				DL:       ngap.GTPTunnel{Addr: l.g.n3.ip, TEID: s.dlTEID},
				QoSFlows: []uint8{uint8(s.qfi.Load())},
			})
		}
	}
	return out
}

// releaseSessions frees every session of the leg and returns their IDs.
func (l *leg) releaseSessions() []uint8 {
	var ids []uint8
	for i := range l.sessions {
		if s := l.sessions[i].Swap(nil); s != nil {
			s.free()
			ids = append(ids, s.id)
		}
	}
	return ids
}

// free gives up the session's tunnels. A source still forwarding keeps
// its DL tunnel until the End Marker of the old path has been passed on
// (or the forwarding times out).
func (s *session) free() {
	n := s.leg.g.n3
	if f := s.fwd.Load(); f != nil && f.close() {
		return // the forwarder frees the session when it ends
	}
	if r := s.reo.Load(); r != nil {
		r.stop()
	}
	n.freeTEID(s)
}

// setupSession creates the AN resources of one session from its PDU
// Session Resource Setup Request Transfer (TS 38.413 §8.2.1.2) and returns
// the encoded Setup Response Transfer, or the cause of failure.
func (g *GNB) setupSession(l *leg, id uint8, transfer []byte) ([]byte, *ngap.Cause) {
	fail := func(group ngap.CauseGroup, v uint8) ([]byte, *ngap.Cause) {
		return nil, &ngap.Cause{Group: group, Value: v}
	}
	if id == 0 || id > 15 {
		return fail(ngap.CauseRadioNetwork, ngap.RadioNetworkUnknownPDUSessionID)
	}
	if l.sessions[id].Load() != nil {
		return fail(ngap.CauseRadioNetwork, ngap.RadioNetworkMultiplePDUSessionIDInstances)
	}
	s, cause := g.newSession(l, id, transfer)
	if cause != nil {
		return nil, cause
	}
	teid := g.n3.allocTEID(s)
	resp, err := ngap.EncodeSetupResponseTransfer(&ngap.PDUSessionResourceSetupResponseTransfer{
		DLTunnel: ngap.GTPTunnel{Addr: g.n3.ip, TEID: teid},
		QoSFlows: slices.Clone(s.qfis),
	})
	if err != nil {
		g.n3.freeTEID(s)
		g.log.Error("encode setup response transfer", "err", err)
		return fail(ngap.CauseMisc, ngap.MiscUnspecified)
	}
	l.sessions[id].Store(s)
	return resp, nil
}

// newSession checks a PDU Session Resource Setup Request Transfer (also
// the Handover Request's, TS 38.413 §9.3.4.1) and makes the session of
// leg l from it, without tunnels.
func (g *GNB) newSession(l *leg, id uint8, transfer []byte) (*session, *ngap.Cause) {
	fail := func(group ngap.CauseGroup, v uint8) (*session, *ngap.Cause) {
		return nil, &ngap.Cause{Group: group, Value: v}
	}
	t, err := ngap.DecodeSetupRequestTransfer(transfer)
	if err != nil {
		g.log.Warn("PDU session resource setup request transfer", "psi", id, "err", err)
		return fail(ngap.CauseProtocol, ngap.ProtocolAbstractSyntaxErrorFalselyConstructedMessage)
	}
	if t.PDUSessionType != ngap.PDUSessionTypeIPv4 && t.PDUSessionType != ngap.PDUSessionTypeIPv4v6 {
		return fail(ngap.CauseRadioNetwork, ngap.RadioNetworkUnspecified)
	}
	if !t.ULTunnel.Addr.Is4() {
		// The simulator's N3 is IPv4 only.
		return fail(ngap.CauseRadioNetwork, ngap.RadioNetworkUnspecified)
	}
	if len(t.QoSFlows) == 0 {
		return fail(ngap.CauseRadioNetwork, ngap.RadioNetworkInvalidQoSCombination)
	}
	s := &session{id: id, leg: l, ambr: t.SessionAMBR}
	s.setUL(t.ULTunnel, g.cfg.N3PeerPort)
	for _, f := range t.QoSFlows {
		if slices.Contains(s.qfis, f.QFI) {
			return fail(ngap.CauseRadioNetwork, ngap.RadioNetworkMultipleQoSFlowIDInstances)
		}
		s.qfis = append(s.qfis, f.QFI)
	}
	s.qfi.Store(uint32(s.qfis[0]))
	return s, nil
}

// setupItems sets up every item and fills the successful and failed lists.
func (g *GNB) setupItems(l *leg, items []ngap.PDUSessionResourceSetupItemSUReq) (ok, failed []ngap.PDUSessionResourceItem, results map[uint8]error) {
	results = make(map[uint8]error, len(items))
	for _, it := range items {
		tr, cause := g.setupSession(l, it.ID, it.Transfer)
		if cause == nil {
			ok = append(ok, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: tr})
			results[it.ID] = nil
			continue
		}
		ut, err := ngap.EncodeSetupUnsuccessfulTransfer(&ngap.PDUSessionResourceSetupUnsuccessfulTransfer{Cause: *cause})
		if err != nil {
			g.log.Error("encode setup unsuccessful transfer", "err", err)
		}
		failed = append(failed, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: ut})
		if _, dup := results[it.ID]; !dup {
			results[it.ID] = &SetupError{ID: it.ID, Cause: *cause}
		}
	}
	return ok, failed, results
}

// SetupError is a PDU session the gNB could not set up.
type SetupError struct {
	ID    uint8
	Cause ngap.Cause
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("gnb: PDU session %d resource setup failed, cause %s", e.ID, e.Cause)
}

// onSetupRequest handles PDU Session Resource Setup Request (TS 38.413
// §8.2.1.2): set up each session, pass the NAS-PDUs to the UE, answer.
func (g *GNB) onSetupRequest(m *ngap.PDUSessionResourceSetupRequest, stream uint16) {
	l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
	if l == nil {
		return
	}
	u := l.ue()
	ok, failed, results := g.setupItems(l, m.Items)
	if m.NASPDU != nil && u != nil {
		u.HandleNAS(m.NASPDU)
	}
	for _, it := range m.Items {
		// A failed session's NAS-PDU is not delivered: the UE learns of
		// the failure from the network instead.
		if it.NASPDU != nil && results[it.ID] == nil && u != nil {
			u.HandleNAS(it.NASPDU)
		}
	}
	resp := &ngap.PDUSessionResourceSetupResponse{
		AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID,
		Setup: ok, Failed: failed,
	}
	t, err := g.sendTimed(g.ueStream(m.RANUENGAPID), resp)
	if err != nil {
		g.log.Warn("PDU session resource setup response", "err", err)
	}
	if u != nil {
		g.reportSetup(u, results, t, err)
	}
}

func (g *GNB) reportSetup(u UE, results map[uint8]error, t time.Time, sendErr error) {
	ids := make([]uint8, 0, len(results))
	for id := range results {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		err := results[id]
		if err == nil && sendErr != nil {
			err = fmt.Errorf("gnb: PDU session resource setup response: %w", sendErr)
		}
		u.HandleSessionSetup(id, t, err)
	}
}

// onModifyRequest handles PDU Session Resource Modify Request (TS 38.413
// §8.2.3.2): apply the QoS flow changes, pass the NAS-PDUs, answer.
func (g *GNB) onModifyRequest(m *ngap.PDUSessionResourceModifyRequest, stream uint16) {
	l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
	if l == nil {
		return
	}
	resp := &ngap.PDUSessionResourceModifyResponse{AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID}
	for _, it := range m.Items {
		tr, cause := g.modifySession(l, it.ID, it.Transfer)
		if cause != nil {
			ut, err := ngap.EncodeModifyUnsuccessfulTransfer(&ngap.PDUSessionResourceModifyUnsuccessfulTransfer{Cause: *cause})
			if err != nil {
				g.log.Error("encode modify unsuccessful transfer", "err", err)
			}
			resp.Failed = append(resp.Failed, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: ut})
			continue
		}
		resp.Modified = append(resp.Modified, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: tr})
		if u := l.ue(); it.NASPDU != nil && u != nil {
			u.HandleNAS(it.NASPDU)
		}
	}
	if err := g.send(g.ueStream(m.RANUENGAPID), resp); err != nil {
		g.log.Warn("PDU session resource modify response", "err", err)
	}
}

func (g *GNB) modifySession(l *leg, id uint8, transfer []byte) ([]byte, *ngap.Cause) {
	var s *session
	if id >= 1 && id <= 15 {
		s = l.sessions[id].Load()
	}
	if s == nil {
		return nil, &ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnknownPDUSessionID}
	}
	t, err := ngap.DecodeModifyRequestTransfer(transfer)
	if err != nil {
		g.log.Warn("PDU session resource modify request transfer", "psi", id, "err", err)
		return nil, &ngap.Cause{Group: ngap.CauseProtocol, Value: ngap.ProtocolAbstractSyntaxErrorFalselyConstructedMessage}
	}
	// TS 38.413 §8.2.3.2, §9.3.4.3: each UL NG-U UP TNL Modify item names
	// by its DL NG-U UP TNL Information the tunnel pair whose uplink end
	// moves. One that names no tunnel of this session is not applied
	// and the session's modification fails, rather than answered
	// "modified" while the uplink stays where it was.
	dl := ngap.GTPTunnel{Addr: g.n3.ip, TEID: s.dlTEID}
	for _, it := range t.ULTunnels {
		if it.DL != dl {
			g.log.Warn("PDU session resource modify: UL tunnel item for a DL tunnel the session does not have",
				"psi", id, "dl", it.DL.Addr, "dl_teid", it.DL.TEID, "session_dl", dl.Addr, "session_dl_teid", dl.TEID)
			return nil, &ngap.Cause{Group: ngap.CauseProtocol, Value: ngap.ProtocolSemanticError}
		}
	}
	qfis := slices.Clone(s.qfis)
	for _, f := range t.QoSFlowsToRelease {
		qfis = slices.DeleteFunc(qfis, func(q uint8) bool { return q == f.QFI })
	}
	var added []uint8
	for _, f := range t.QoSFlowsAddOrModify {
		if !slices.Contains(qfis, f.QFI) {
			qfis = append(qfis, f.QFI)
		}
		added = append(added, f.QFI)
	}
	if len(qfis) == 0 {
		return nil, &ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkInvalidQoSCombination}
	}
	resp, err := ngap.EncodeModifyResponseTransfer(&ngap.PDUSessionResourceModifyResponseTransfer{QoSFlows: added})
	if err != nil {
		g.log.Error("encode modify response transfer", "err", err)
		return nil, &ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnspecified}
	}
	s.qfis = qfis
	if !slices.Contains(qfis, uint8(s.qfi.Load())) {
		s.qfi.Store(uint32(qfis[0]))
	}
	// TS 38.413 §8.2.3.2: the UPF's end of the tunnel paired with ours
	// moves (a UPF that restarted and chose a new F-TEID).
	for _, it := range t.ULTunnels {
		s.setUL(it.UL, g.cfg.N3PeerPort)
	}
	if t.SessionAMBR != nil {
		a := *t.SessionAMBR
		s.ambr = &a
	}
	return resp, nil
}

// onReleaseCommand handles PDU Session Resource Release Command (TS 38.413
// §8.2.2.2): pass the NAS-PDU, release the sessions, answer.
func (g *GNB) onReleaseCommand(m *ngap.PDUSessionResourceReleaseCommand, stream uint16) {
	l := g.ueLeg(m.AMFUENGAPID, m.RANUENGAPID, stream)
	if l == nil {
		return
	}
	u := l.ue()
	if m.NASPDU != nil && u != nil {
		u.HandleNAS(m.NASPDU)
	}
	rt, err := ngap.EncodeReleaseResponseTransfer(&ngap.PDUSessionResourceReleaseResponseTransfer{})
	if err != nil {
		g.log.Error("encode release response transfer", "err", err)
	}
	resp := &ngap.PDUSessionResourceReleaseResponse{AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID}
	var ids []uint8
	for _, it := range m.Items {
		if _, err := ngap.DecodeReleaseCommandTransfer(it.Transfer); err != nil {
			// The cause is informative only; release all the same.
			g.log.Debug("PDU session resource release command transfer", "psi", it.ID, "err", err)
		}
		if it.ID >= 1 && it.ID <= 15 {
			if s := l.sessions[it.ID].Swap(nil); s != nil {
				s.free()
			}
		}
		// §8.2.2.2: every session in the command is reported released,
		// also one the gNB did not know.
		resp.Released = append(resp.Released, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: rt})
		ids = append(ids, it.ID)
	}
	t, err := g.sendTimed(g.ueStream(m.RANUENGAPID), resp)
	if err != nil {
		g.log.Warn("PDU session resource release response", "err", err)
	}
	if u != nil {
		for _, id := range ids {
			u.HandleSessionReleased(id, t)
		}
	}
}
