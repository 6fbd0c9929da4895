package amf

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// serveGNB reads one association until it fails or the AMF closes. The
// reader decodes and dispatches: non-UE-associated procedures (NG Setup,
// Error Indication) are answered here, UE-associated messages are posted to
// the UE's executor. No UE work runs on the reader.
func (a *AMF) serveGNB(g *gnb) {
	err := sctp.Serve(g.conn(), func(m sctp.Message) {
		// A handler that hands the message to a UE's step takes its
		// stamp; what is left is acknowledged here, the message handled
		// (commit.go).
		g.stamp = m.Stamp
		if m.Stamp != 0 && a.delivered.Load() != 0 {
			raise(&a.lastStamp, m.Stamp) // replay.go
		}
		if m.PPID != ngap.PPID && m.PPID != 0 {
			// TS 38.412 §7: NGAP is PPID 60; anything else is not ours.
			g.log.Debug("dropping SCTP message with foreign PPID", "ppid", m.PPID)
		} else {
			a.handleNGAP(g, m.Data)
		}
		g.ack(g.takeStamp())
	})
	if errors.Is(err, sctp.ErrFrontLost) {
		// The association lives on at the N2 front end, and the unit
		// that takes over from this one gets it with the connections
		// this one recorded: losing them here would record a teardown
		// that never happened for the successor to restore.
		g.log.Warn("N2 front end lost: the association is left to the next unit", "err", err)
		g.conn().Close()
		return
	}
	a.dropGNB(g)
	if !a.group.Closed() {
		g.log.Info("N2 association closed", "err", err)
	}
}

// dropGNB forgets an association: every UE connection on it is gone
// (TS 23.502 §4.2.6: the AN release is implicit).
func (a *AMF) dropGNB(g *gnb) {
	a.retireGNB(g)
	g.conn().Close()
}

// retireGNB takes g out of service: no new connections on it, it is no
// longer counted or found, and its UE connections are lost as after an NG
// Reset of the whole interface. It returns false when g was already
// retired (its reader ends after a newer association of the same node
// retired it).
func (a *AMF) retireGNB(g *gnb) bool {
	g.mu.Lock()
	if g.dead {
		g.mu.Unlock()
		return false
	}
	g.dead = true
	if g.resetAck != nil {
		close(g.resetAck) // an AMF-initiated NG Reset waits in vain
		g.resetAck = nil
	}
	g.mu.Unlock()
	a.mu.Lock()
	delete(a.gnbs, g)
	a.mu.Unlock()
	if g.setupDone.Load() {
		a.stats.gnbs.Add(-1)
	}
	a.loseConnections(a.connectionsOf(g))
	return true
}

// ngapKey names one NGAP message: procedure code and message type.
type ngapKey struct {
	proc int64
	typ  ngap.MessageType
}

// ngapHandler handles a decoded message on the reader goroutine: it may
// answer non-UE-associated signalling itself; UE-associated messages it
// posts to the UE's executor.
type ngapHandler func(a *AMF, g *gnb, m ngap.Message)

// ngapHandlers is every NGAP message an AMF accepts from a gNB (TS 38.413
// §8), by procedure code and message type. A message we decode but do not
// list is answered with an Error Indication (§10.4).
var ngapHandlers = map[ngapKey]ngapHandler{
	{ngap.ProcNGSetup, ngap.InitiatingMessage}: func(a *AMF, g *gnb, m ngap.Message) {
		a.handleNGSetup(g, m.(*ngap.NGSetupRequest))
	},
	{ngap.ProcInitialUEMessage, ngap.InitiatingMessage}: func(a *AMF, g *gnb, m ngap.Message) {
		a.handleInitialUEMessage(g, m.(*ngap.InitialUEMessage))
	},
	{ngap.ProcErrorIndication, ngap.InitiatingMessage}: func(a *AMF, g *gnb, m ngap.Message) {
		a.handleErrorIndication(g, m.(*ngap.ErrorIndication))
	},
	// Restoration (TS 38.413 §8.7.4, §8.7.2).
	{ngap.ProcNGReset, ngap.InitiatingMessage}: func(a *AMF, g *gnb, m ngap.Message) {
		a.handleNGReset(g, m.(*ngap.NGReset))
	},
	{ngap.ProcNGReset, ngap.SuccessfulOutcome}: func(a *AMF, g *gnb, m ngap.Message) {
		a.handleNGResetAcknowledge(g, m.(*ngap.NGResetAcknowledge))
	},
	{ngap.ProcRANConfigurationUpdate, ngap.InitiatingMessage}: func(a *AMF, g *gnb, m ngap.Message) {
		a.handleRANConfigurationUpdate(g, m.(*ngap.RANConfigurationUpdate))
	},
	{ngap.ProcUplinkNASTransport, ngap.InitiatingMessage}: onUE(func(m *ngap.UplinkNASTransport) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		func(u *ue, r *ranUE, m *ngap.UplinkNASTransport) { u.handleUplinkNAS(r, m.NASPDU, m.UserLocation) }),
	{ngap.ProcNASNonDeliveryIndication, ngap.InitiatingMessage}: onUE(func(m *ngap.NASNonDeliveryIndication) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		func(u *ue, r *ranUE, m *ngap.NASNonDeliveryIndication) {
			u.log.Info("NAS non delivery", "amf_ue_ngap_id", r.amfID, "cause", m.Cause.String())
		}),
	{ngap.ProcInitialContextSetup, ngap.SuccessfulOutcome}: onUE(func(m *ngap.InitialContextSetupResponse) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onInitialContextSetupResponse),
	{ngap.ProcInitialContextSetup, ngap.UnsuccessfulOutcome}: onUE(func(m *ngap.InitialContextSetupFailure) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onInitialContextSetupFailure),
	{ngap.ProcUEContextReleaseRequest, ngap.InitiatingMessage}: onUE(func(m *ngap.UEContextReleaseRequest) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		func(u *ue, r *ranUE, m *ngap.UEContextReleaseRequest) { u.onContextReleaseRequest(r, m.Cause) }),
	{ngap.ProcUEContextRelease, ngap.SuccessfulOutcome}: onUE(func(m *ngap.UEContextReleaseComplete) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		func(u *ue, r *ranUE, m *ngap.UEContextReleaseComplete) {
			u.onContextReleaseComplete(r, m.PDUSessionIDs)
		}),
	{ngap.ProcPDUSessionResourceSetup, ngap.SuccessfulOutcome}: onUE(func(m *ngap.PDUSessionResourceSetupResponse) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onPDUSessionResourceSetupResponse),
	{ngap.ProcPDUSessionResourceModify, ngap.SuccessfulOutcome}: onUE(func(m *ngap.PDUSessionResourceModifyResponse) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onPDUSessionResourceModifyResponse),
	{ngap.ProcPDUSessionResourceRelease, ngap.SuccessfulOutcome}: onUE(func(m *ngap.PDUSessionResourceReleaseResponse) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onPDUSessionResourceReleaseResponse),

	// Mobility (TS 38.413 §8.4).
	{ngap.ProcPathSwitchRequest, ngap.InitiatingMessage}: func(a *AMF, g *gnb, m ngap.Message) {
		a.handlePathSwitchRequest(g, m.(*ngap.PathSwitchRequest))
	},
	{ngap.ProcHandoverPreparation, ngap.InitiatingMessage}: onUE(func(m *ngap.HandoverRequired) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onHandoverRequired),
	{ngap.ProcHandoverResourceAllocation, ngap.SuccessfulOutcome}: onTarget(func(m *ngap.HandoverRequestAcknowledge) int64 { return m.AMFUENGAPID },
		(*ue).onHandoverRequestAcknowledge),
	{ngap.ProcHandoverResourceAllocation, ngap.UnsuccessfulOutcome}: onTarget(func(m *ngap.HandoverFailure) int64 { return m.AMFUENGAPID },
		(*ue).onHandoverFailure),
	{ngap.ProcHandoverNotification, ngap.InitiatingMessage}: onUE(func(m *ngap.HandoverNotify) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onHandoverNotify),
	{ngap.ProcHandoverCancel, ngap.InitiatingMessage}: onUE(func(m *ngap.HandoverCancel) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onHandoverCancel),
	{ngap.ProcUplinkRANStatusTransfer, ngap.InitiatingMessage}: onUE(func(m *ngap.UplinkRANStatusTransfer) (int64, int64) { return m.AMFUENGAPID, m.RANUENGAPID },
		(*ue).onUplinkRANStatusTransfer),
}

// onUE adapts a handler of one UE-associated message type to the table:
// ids reads the message's UE NGAP IDs, the connection is looked up (unknown
// or inconsistent IDs get an Error Indication, TS 38.413 §10.6) and the
// handler is posted to its UE's executor.
func onUE[M ngap.Message](ids func(M) (amfID, ranID int64), h func(u *ue, r *ranUE, m M)) ngapHandler {
	return func(a *AMF, g *gnb, msg ngap.Message) {
		m := msg.(M)
		amfID, ranID := ids(m)
		r := a.lookupRANUE(g, amfID, ranID)
		if r == nil {
			return
		}
		u := r.ue
		u.postMessage(g, g.takeStamp(), func() { h(u, r, m) })
	}
}

// handleNGAP decodes and dispatches one NGAP PDU (TS 38.413 §8).
func (a *AMF) handleNGAP(g *gnb, data []byte) {
	msg, err := ngap.Decode(data)
	if err != nil {
		// TS 38.413 §10: report with Error Indication, keep the association.
		var de *ngap.DecodeError
		if errors.As(err, &de) {
			g.log.Info("undecodable NGAP PDU", "err", err)
			if de.Notify {
				g.sendErrorIndication(de.ErrorIndication())
			}
			return
		}
		g.log.Info("undecodable NGAP PDU", "err", err)
		g.errorIndication(causeTransferSyntax, nil, nil)
		return
	}
	key := ngapKey{msg.ProcedureCode(), msg.MessageType()}
	if !g.setupDone.Load() && key != (ngapKey{ngap.ProcNGSetup, ngap.InitiatingMessage}) {
		// TS 38.413 §8.7.1.1: NG Setup is the first NGAP procedure.
		g.log.Info("NGAP message before NG Setup", "procedure", msg.ProcedureCode())
		g.errorIndication(causeNotCompatibleState, nil, nil)
		return
	}
	if h := ngapHandlers[key]; h != nil {
		h(a, g, msg)
		return
	}
	// A message we decode but that the gNB must not send to an AMF (e.g. a
	// Downlink NAS Transport): TS 38.413 §10.4 logical error.
	g.log.Info("unexpected NGAP message", "procedure", msg.ProcedureCode(), "type", msg.MessageType().String())
	amfID, ranID := ueIDsOf(msg)
	g.errorIndication(causeNotCompatibleState, amfID, ranID)
}

// handleErrorIndication: TS 38.413 §8.7.5.2, the receiver takes it into
// account; tern logs it.
func (a *AMF) handleErrorIndication(g *gnb, m *ngap.ErrorIndication) {
	attrs := []any{}
	if m.Cause != nil {
		attrs = append(attrs, "cause", m.Cause.String())
	}
	if m.AMFUENGAPID != nil {
		attrs = append(attrs, "amf_ue_ngap_id", *m.AMFUENGAPID)
	}
	g.log.Info("error indication from gNB", attrs...)
}

// lookupRANUE finds the UE-associated connection of a message, answering
// unknown or inconsistent IDs with an Error Indication (TS 38.413 §10.6).
func (a *AMF) lookupRANUE(g *gnb, amfID, ranID int64) *ranUE {
	r := a.ranUEs.Get(amfID)
	if (r == nil || r.gnb != g || r.ranID != ranID) && a.replayedGone(g) {
		return nil
	}
	if r == nil {
		g.log.Info("unknown AMF UE NGAP ID", "amf_ue_ngap_id", amfID, "ran_ue_ngap_id", ranID)
		g.errorIndication(causeUnknownLocalID, &amfID, &ranID)
		return nil
	}
	if r.gnb != g || r.ranID != ranID {
		g.log.Info("inconsistent UE NGAP IDs", "amf_ue_ngap_id", amfID, "ran_ue_ngap_id", ranID)
		g.errorIndication(causeInconsistentRemoteID, &amfID, &ranID)
		return nil
	}
	return r
}

// handleNGSetup runs the AMF side of NG Setup (TS 38.413 §8.7.1): at least
// one broadcast TAI must be one we serve, and one of its slices one we
// support there.
func (a *AMF) handleNGSetup(g *gnb, req *ngap.NGSetupRequest) {
	served, cause := a.servedTAIs(req.SupportedTAs)
	if cause != nil {
		wait := ngap.TimeToWait5s
		fail := &ngap.NGSetupFailure{Cause: *cause, TimeToWait: &wait}
		g.log.Info("NG Setup rejected", append([]any{"cause", cause.String(), "gnb_id", req.GlobalRANNodeID.GNBID},
			a.taMismatch(req.SupportedTAs)...)...)
		a.stats.ngSetupFailures.Add(1)
		if err := g.send(0, fail); err != nil {
			g.log.Warn("NG Setup Failure not sent", "err", err)
		}
		return
	}
	if g.setupDone.Load() {
		// TS 38.413 §8.7.1.2: a repeated NG Setup re-initialises the
		// UE-related contexts and erases the signalling connections, as an
		// NG Reset of the whole interface would.
		a.loseConnections(a.connectionsOf(g))
	}
	// The node may come back on a new association before the old one is
	// seen to fail (a gNB restart): the new setup replaces the node's old
	// configuration (§8.7.1.2), so the stale association goes, with its UE
	// connections, and is closed off the reader (closing a dead association
	// waits out the SCTP shutdown).
	for _, old := range a.gnbsOf(req.GlobalRANNodeID) {
		if old != g && a.retireGNB(old) {
			old.log.Info("association replaced by a new NG Setup of the same node", "gnb_id", req.GlobalRANNodeID.GNBID)
			if !a.group.Go(func() { old.conn().Close() }) {
				old.conn().Close()
			}
		}
	}
	if !g.setupDone.Swap(true) {
		a.stats.gnbs.Add(1)
	}
	g.node.Store(&gnbNode{id: req.GlobalRANNodeID, tais: served})
	a.stats.ngSetups.Add(1)
	if err := g.send(0, a.ngSetupResponse()); err != nil {
		g.log.Warn("NG Setup Response not sent", "err", err)
		return
	}
	g.log.Info("NG Setup complete", "name", req.RANNodeName, "gnb_id", req.GlobalRANNodeID.GNBID, "tais", len(served))
}

// servedTAIs returns the broadcast TAIs of tas that we serve with at least
// one of the slices the gNB supports there, or the cause for refusing the
// configuration (NG Setup, TS 38.413 §8.7.1.4; RAN Configuration Update,
// §8.7.2.4) when there is none.
func (a *AMF) servedTAIs(tas []ngap.SupportedTA) ([]identity.TAI, *ngap.Cause) {
	var plmnOK, taiOK, sliceOK bool
	var served []identity.TAI
	for _, ta := range tas {
		for _, bp := range ta.BroadcastPLMNs {
			if a.cfg.plmnIndex(bp.PLMN) >= 0 {
				plmnOK = true
			}
			tai := identity.TAI{PLMN: bp.PLMN, TAC: ta.TAC}
			slices, ok := a.cfg.taSlices[tai]
			if !ok {
				continue
			}
			taiOK = true
			for _, s := range bp.Slices {
				if containsSNSSAI(slices, s) {
					sliceOK = true
					served = append(served, tai)
					break
				}
			}
		}
	}
	switch {
	case !plmnOK, !taiOK:
		// No broadcast PLMN (or no TAI) we serve: misc unknown-PLMN-or-SNPN,
		// as Open5GS and free5GC answer.
		return nil, &causeUnknownPLMN
	case !sliceOK:
		return nil, &causeSliceNotSupported
	}
	return served, nil
}

// taMismatch is what a refused NG Setup or RAN Configuration Update logs
// beside its cause (TS 38.413 §8.7.1.4, §8.7.2.4): why the gNB's supported
// TAs were refused, the TAs, PLMNs and slices it broadcasts, and the TAIs
// this AMF serves (amf.tais), so that an operator sees which TAC or PLMN
// does not match without a capture.
func (a *AMF) taMismatch(tas []ngap.SupportedTA) []any {
	var plmnOK, taiOK bool
	var gnbTAs []string
	for _, ta := range tas {
		for _, bp := range ta.BroadcastPLMNs {
			if a.cfg.plmnIndex(bp.PLMN) >= 0 {
				plmnOK = true
			}
			if _, ok := a.cfg.taSlices[identity.TAI{PLMN: bp.PLMN, TAC: ta.TAC}]; ok {
				taiOK = true
			}
			gnbTAs = append(gnbTAs, describeTA(bp.PLMN, ta.TAC, bp.Slices))
		}
	}
	var why string
	switch {
	case !plmnOK:
		why = "no PLMN the gNB broadcasts is one of amf.tais"
	case !taiOK:
		why = "no TAC the gNB serves is in amf.tais for its PLMN"
	default:
		why = "no slice the gNB supports in a TA of amf.tais is one amf.tais gives that TA"
	}
	amfTAIs := make([]string, 0, len(a.cfg.tais))
	for _, t := range a.cfg.tais {
		amfTAIs = append(amfTAIs, describeTA(t.PLMN, t.TAC, a.cfg.taSlices[t]))
	}
	return []any{"why", why, "gnb_tas", strings.Join(gnbTAs, "; "), "amf_tais", strings.Join(amfTAIs, "; ")}
}

// describeTA is a TA as the configuration writes it: PLMN, decimal TAC
// (amf.tais[].tac) and slices.
func describeTA(plmn identity.PLMN, tac uint32, slices []identity.SNSSAI) string {
	ss := make([]string, len(slices))
	for i, s := range slices {
		ss[i] = s.String()
	}
	return fmt.Sprintf("plmn %s tac %d slices %s", plmn, tac, strings.Join(ss, ","))
}

// gnbsOf returns the set-up associations of the node with Global RAN Node
// ID id.
func (a *AMF) gnbsOf(id ngap.GlobalGNBID) []*gnb {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*gnb
	for g := range a.gnbs {
		if n := g.node.Load(); n != nil && n.id == id {
			out = append(out, g)
		}
	}
	return out
}

// handleInitialUEMessage starts a UE-associated logical NG-connection
// (TS 38.413 §8.6.1). A message naming a 5G-GUTI (or 5G-S-TMSI) we
// assigned goes to that UE context, which verifies it; anything else gets
// a new context. Only the lookup runs here; the UE's executor does the rest.
func (a *AMF) handleInitialUEMessage(g *gnb, m *ngap.InitialUEMessage) {
	var msg nas.Message
	if inner, _, err := nas.PeekPlain(m.NASPDU); err == nil {
		msg, _ = nas.Decode(inner)
	}
	if u := a.replayedConn(g, m.RANUENGAPID); u != nil {
		// A replay of the message that made a restored connection
		// (dedup.go): its context's step sees the stamp applied.
		u.postMessage(g, g.takeStamp(), func() { u.log.Debug("replayed Initial UE Message past its context's record") })
		return
	}
	if tmsi, ok := a.initialTMSI(msg, m.FiveGSTMSI); ok {
		if u := a.gutis.lookup(tmsi); u != nil {
			u.postMessage(g, g.takeStamp(), func() { u.onInitialUEMessageForKnownGUTI(g, m, msg) })
			return
		}
	}
	a.newConnection(g, m, msg)
}

// newConnection gives an Initial UE Message a fresh UE context (no 5G-GUTI
// of ours, or its claim did not verify).
func (a *AMF) newConnection(g *gnb, m *ngap.InitialUEMessage, msg nas.Message) {
	u := a.newUE()
	r := a.newRANUE(g, u, m.RANUENGAPID, m.UserLocation)
	if r == nil {
		u.post(u.removeContext)
		return
	}
	u.postMessage(g, g.takeStamp(), func() { u.onInitialUEMessage(r, m.NASPDU, msg) })
}

// initialTMSI returns the 5G-TMSI of an initial NAS message when it names a
// 5G-GUTI of one of our GUAMIs, or of the 5G-S-TMSI a Service Request
// carries (TS 24.501 §5.6.1.2).
func (a *AMF) initialTMSI(m nas.Message, rrc *identity.STMSI) (uint32, bool) {
	var id nas.MobileIdentity
	switch v := m.(type) {
	case *nas.RegistrationRequest:
		id = v.MobileIdentity
	case *nas.DeregistrationRequestUEOriginating:
		id = v.MobileIdentity
	case *nas.ServiceRequest:
		return a.ourSTMSI(v.STMSI)
	default:
		if rrc != nil {
			return a.ourSTMSI(*rrc)
		}
		return 0, false
	}
	if id.Type != nas.IdentityGUTI || !a.cfg.isOurGUAMI(id.GUTI.GUAMI) {
		return 0, false
	}
	return id.GUTI.TMSI, true
}

// ourSTMSI returns the 5G-TMSI of s when its AMF Set ID and Pointer are
// one of our GUAMIs' (TS 23.003 §2.11).
func (a *AMF) ourSTMSI(s identity.STMSI) (uint32, bool) {
	for _, g := range a.cfg.guamis {
		if g.AMFID.SetID == s.SetID && g.AMFID.Pointer == s.Pointer {
			return s.TMSI, true
		}
	}
	return 0, false
}

// newUE makes an empty UE context in RM-DEREGISTERED / CM-IDLE.
func (a *AMF) newUE() *ue {
	a.stats.contexts.Add(1)
	u := &ue{amf: a, log: a.log, id: a.nextUEID.Add(1)}
	u.exec.Init(a.group)
	u.setState(ueState{})
	u.setReachable(true)
	return u
}

// newRANUE allocates an AMF UE NGAP ID (TS 38.413 §9.3.3.1) and registers
// the connection for u. ranID 0 registers a handover target, which has no
// RAN UE NGAP ID until the target acknowledges. It returns nil when the
// association is already gone. The caller makes it u's connection on u's
// executor.
func (a *AMF) newRANUE(g *gnb, u *ue, ranID int64, loc ngap.UserLocationNR) *ranUE {
	id := a.nextAMFUEID.Add(1) & maxAMFUENGAPID
	r := &ranUE{gnb: g, ue: u, amfID: id, ranID: ranID, tai: loc.TAI, loc: loc}
	r.stream = g.streamFor(id)
	if ranID == 0 {
		g.mu.Lock()
		dead := g.dead
		g.mu.Unlock()
		if dead {
			return nil
		}
		a.ranUEs.put(r)
		return r
	}
	old, ok := g.addUE(r)
	if !ok {
		return nil
	}
	a.ranUEs.put(r)
	if old != nil {
		// TS 38.413 §8.6.1.2 does not allow reuse of a RAN UE NGAP ID in
		// use; the gNB has evidently forgotten the old connection.
		a.loseConnections([]*ranUE{old})
	}
	return r
}
