package amf

import (
	"errors"
	"fmt"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/kdf"
)

// Handover (TS 23.502 §4.9.1; TS 38.413 §8.4; TS 33.501 §6.9.2).
//
// Xn handover: the gNBs move the UE between themselves; the target then
// sends Path Switch Request on a new UE-associated connection, the AMF has
// each SMF switch the downlink to the target's tunnel (the UPF sends End
// Marker on the old path) and acknowledges with a fresh {NH, NCC}. The old
// connection ends without NGAP signalling (the source releases it over Xn).
//
// N2 handover: the source sends Handover Required; the AMF asks each SMF
// to prepare (HANDOVER_REQUIRED -> the target's setup transfer), sends
// Handover Request to the target on a new connection (the UE's target
// leg), relays the target's acknowledgement to the SMFs (HANDOVER_REQ_ACK
// -> the Handover Command transfer with, in "forwarding" mode, the
// indirect forwarding tunnel) and sends Handover Command to the source.
// Handover Notify from the target makes the target leg the serving one;
// the SMFs switch the downlink (COMPLETED), and the source's connection is
// released. Preparation failure, cancel, a failure at the target, the loss
// of either gNB and the guard timer all end it with the UE on the source.

// hoSession is one PDU session of an N2 handover.
type hoSession struct {
	id      uint8
	snssai  identity.SNSSAI
	setup   []byte // setup request transfer for the target (from the SMF)
	command []byte // Handover Command transfer (from the SMF)
}

// handoverProc is the data of a running N2 handover.
type handoverProc struct {
	hoType    ngap.HandoverType
	cause     ngap.Cause
	sessions  []hoSession
	toTarget  []byte // Source to Target Transparent Container
	completed bool   // Handover Notify received
}

// nextNH advances the UE's NH chain (TS 33.501 §6.9.2.1.1, A.10): the first
// NH is derived from the initial KgNB, each further one from the previous,
// and the NCC counts them (3 bits on the wire).
func (u *ue) nextNH() ngap.SecurityContext {
	u.nh = kdf.NH(u.kamf, u.nh)
	u.ncc++
	var sc ngap.SecurityContext
	sc.NextHopChainingCount = u.ncc & 7
	copy(sc.NextHopNH[:], u.nh)
	return sc
}

// ---- Xn handover: Path Switch Request (TS 38.413 §8.4.4, TS 23.502
// §4.9.1.2.2) ----

// handlePathSwitchRequest runs on the reader: the message opens a new
// UE-associated connection and names the UE by its source AMF UE NGAP ID.
func (a *AMF) handlePathSwitchRequest(g *gnb, m *ngap.PathSwitchRequest) {
	src := a.ranUEs.Get(m.SourceAMFUENGAPID)
	if src == nil && a.replayedGone(g) {
		return
	}
	if src == nil {
		g.log.Info("Path Switch Request for an unknown UE", "source_amf_ue_ngap_id", m.SourceAMFUENGAPID)
		g.pathSwitchFailure(nil, m, nil)
		return
	}
	u := src.ue
	u.postMessage(g, g.takeStamp(), func() { u.onPathSwitchRequest(g, src, m) })
}

func (u *ue) onPathSwitchRequest(g *gnb, src *ranUE, m *ngap.PathSwitchRequest) {
	a := u.amf
	// The switch runs within this one event, so it is timed here rather
	// than by the state machine (observe.go).
	start, outcome := time.Now(), procedures.Rejected
	u.logStarted(ProcPathSwitch)
	defer func() { u.procedureEnded(ProcPathSwitch, outcome, start) }()
	if u.gone() || src != u.ran || u.st.rm != rmRegistered || (u.st.proc != procNone && u.st.proc != procRegistration) {
		// TS 23.502 §4.9.1.2.2: the switch cannot be done for a UE in
		// this state (not registered, or a procedure that holds the
		// connection: a handover, paging, a service request, a
		// deregistration). A registration update goes on over the new
		// connection: the one after the previous handover may still
		// wait for its Registration Complete when the UE moves again
		// (T3550 retransmits the accept on the new connection if the
		// complete went to the old one).
		u.log.Info("Path Switch Request refused", "state", u.st.String())
		g.pathSwitchFailure(u, m, nil)
		return
	}
	r := a.newRANUE(g, u, m.RANUENGAPID, m.UserLocation)
	if r == nil {
		return
	}
	r.state = legContext
	smf := a.smfService()
	var switched, released []ngap.PDUSessionResourceItem
	for _, it := range m.ToBeSwitched {
		s := u.sessions[it.ID]
		if s == nil || s.smfOr(smf) == nil {
			released = append(released, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: pathSwitchUnsuccessful()})
			continue
		}
		upd, err := u.updateN2(smf, s, models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ, it.Transfer, nil)
		if err != nil || upd == nil || len(upd.N2SmInfo) == 0 {
			u.log.Info("path switch refused by the SMF", "pdu_session_id", it.ID, "err", err)
			released = append(released, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: pathSwitchUnsuccessful()})
			continue
		}
		s.up = upActive
		switched = append(switched, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: upd.N2SmInfo})
	}
	for _, it := range m.FailedToSetup {
		// TS 23.502 §4.9.1.2.2 step 2: the target could not set these
		// up; their user plane is deactivated.
		if s := u.sessions[it.ID]; s != nil && smf != nil {
			if _, err := u.updateN2(smf, s, models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_SETUP_FAIL, it.Transfer, nil); err != nil {
				u.log.Info("path switch setup failure not taken by the SMF", "pdu_session_id", it.ID, "err", err)
			}
			s.up = upDeactivated
		}
	}
	if len(switched) == 0 && len(m.ToBeSwitched) > 0 {
		// TS 38.413 §8.4.4.3: none could be switched.
		a.stats.pathSwitchFailures.Add(1)
		r.gnb.pathSwitchFailureFor(r, released)
		a.ranUEs.delete(r)
		r.gnb.removeUE(r)
		u.releaseConnection(causeNASUnspecified)
		return
	}
	old := u.ran
	u.ran = r
	// The source released its connection over Xn (TS 23.502 §4.9.1.2.2
	// step 7): its IDs are freed without NGAP signalling.
	a.ranUEs.delete(old)
	old.gnb.removeUE(old)
	ack := &ngap.PathSwitchRequestAcknowledge{
		AMFUENGAPID:     r.amfID,
		RANUENGAPID:     r.ranID,
		SecurityContext: u.nextNH(),
		Switched:        switched,
		Released:        released,
		AllowedNSSAI:    u.allowedNSSAI,
	}
	stored := ngap.UESecurityCapabilitiesFromNAS(u.ueSecCap.EA, u.ueSecCap.IA, u.ueSecCap.EEA, u.ueSecCap.EIA)
	if m.UESecurityCapabilities != stored {
		// TS 33.501 §6.7.3.1: the target gets the capabilities the AMF
		// stores when the request's differ.
		ack.UESecurityCapabilities = &stored
	}
	a.stats.pathSwitches.Add(1) // before the send: whoever sees the ack sees the count
	outcome = procedures.Success
	if err := u.sendN2(r.gnb, r.stream, ack); err != nil {
		u.log.Warn("Path Switch Request Acknowledge not sent", "err", err)
	}
	u.deliverPending()
}

// pathSwitchUnsuccessful is the Path Switch Request Unsuccessful Transfer
// for a session the AMF could not switch (TS 38.413 §9.3.4.10).
func pathSwitchUnsuccessful() []byte {
	b, err := ngap.EncodePathSwitchRequestUnsuccessfulTransfer(&ngap.PathSwitchRequestUnsuccessfulTransfer{
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnspecified},
	})
	if err != nil {
		return nil
	}
	return b
}

// pathSwitchFailure answers a Path Switch Request that names no UE the AMF
// can switch (TS 38.413 §8.4.4.3); u is the UE whose step answers (nil:
// the reader).
func (g *gnb) pathSwitchFailure(u *ue, m *ngap.PathSwitchRequest, released []ngap.PDUSessionResourceItem) {
	if released == nil {
		for _, it := range m.ToBeSwitched {
			released = append(released, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: pathSwitchUnsuccessful()})
		}
	}
	g.amf.stats.pathSwitchFailures.Add(1)
	f := &ngap.PathSwitchRequestFailure{AMFUENGAPID: m.SourceAMFUENGAPID, RANUENGAPID: m.RANUENGAPID, Released: released}
	if err := u.sendN2(g, g.streamFor(m.SourceAMFUENGAPID), f); err != nil {
		g.log.Warn("Path Switch Request Failure not sent", "err", err)
	}
}

func (g *gnb) pathSwitchFailureFor(r *ranUE, released []ngap.PDUSessionResourceItem) {
	f := &ngap.PathSwitchRequestFailure{AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, Released: released}
	if err := r.ue.sendN2(g, r.stream, f); err != nil {
		g.log.Warn("Path Switch Request Failure not sent", "err", err)
	}
}

// ---- N2 handover (TS 38.413 §8.4.1-§8.4.3, §8.4.5-§8.4.7; TS 23.502
// §4.9.1.3) ----

// onHandoverRequired starts the preparation (TS 23.502 §4.9.1.3.2 steps
// 1-9) on the source's connection r.
func (u *ue) onHandoverRequired(r *ranUE, m *ngap.HandoverRequired) {
	a := u.amf
	if u.gone() || r != u.ran {
		r.gnb.handoverPreparationFailure(r, causeNotCompatibleState)
		return
	}
	if u.st.proc != procNone || u.st.rm != rmRegistered {
		// TS 23.502 §4.9.1.3.2: the AMF may reject a handover while
		// another procedure runs for the UE.
		u.log.Info("Handover Required refused", "state", u.st.String())
		r.gnb.handoverPreparationFailure(r, causeNotCompatibleState)
		return
	}
	tg := a.gnbByID(m.TargetID.GlobalGNBID)
	if tg == nil || !tg.servesTAI(m.TargetID.SelectedTAI) {
		u.log.Info("Handover Required for an unknown target", "gnb_id", m.TargetID.GlobalGNBID.GNBID)
		r.gnb.handoverPreparationFailure(r, ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnknownTargetID})
		return
	}
	smf := a.smfService()
	ho := handoverProc{hoType: m.HandoverType, cause: m.Cause, toTarget: m.SourceToTargetTransparentContainer}
	for _, it := range m.Sessions {
		s := u.sessions[it.ID]
		if s == nil || s.smfOr(smf) == nil {
			continue
		}
		upd, err := u.updateN2(smf, s, models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQUIRED, it.Transfer,
			func(d *models.Smf_PDUSess_SmContextUpdateData) {
				d.HoState = models.Smf_PDUSess_HoState_PREPARING
				d.TargetId = targetIDModel(m.TargetID)
			})
		if err != nil || upd == nil || len(upd.N2SmInfo) == 0 {
			u.log.Info("handover preparation refused by the SMF", "pdu_session_id", it.ID, "err", err)
			continue
		}
		ho.sessions = append(ho.sessions, hoSession{id: it.ID, snssai: s.snssai, setup: upd.N2SmInfo})
	}
	if len(ho.sessions) == 0 && len(m.Sessions) > 0 {
		// TS 23.502 §4.9.1.3.2 step 4: no PDU session can be handed over.
		u.log.Info("no PDU session can be handed over")
		r.gnb.handoverPreparationFailure(r, ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHOFailureInTarget})
		return
	}
	t := a.newRANUE(tg, u, 0, ngap.UserLocationNR{TAI: m.TargetID.SelectedTAI})
	if t == nil {
		r.gnb.handoverPreparationFailure(r, ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnknownTargetID})
		u.cancelAtSMFs(ho.sessions)
		return
	}
	t.state = legHandoverPreparing
	if !u.fire(evHandoverStart) {
		a.ranUEs.delete(t)
		r.gnb.handoverPreparationFailure(r, causeNotCompatibleState)
		u.cancelAtSMFs(ho.sessions)
		return
	}
	u.target = t
	u.ho = ho
	ambr := ngap.AMBR{UL: maxNGAPBitRate, DL: maxNGAPBitRate}
	if u.ueAMBR != nil {
		ambr = *u.ueAMBR
	}
	req := &ngap.HandoverRequest{
		AMFUENGAPID:                        t.amfID,
		HandoverType:                       m.HandoverType,
		Cause:                              m.Cause,
		UEAggregateMaxBitRate:              ambr,
		UESecurityCapabilities:             ngap.UESecurityCapabilitiesFromNAS(u.ueSecCap.EA, u.ueSecCap.IA, u.ueSecCap.EEA, u.ueSecCap.EIA),
		SecurityContext:                    u.nextNH(),
		AllowedNSSAI:                       u.allowedNSSAI,
		SourceToTargetTransparentContainer: m.SourceToTargetTransparentContainer,
		GUAMI:                              u.guami(),
	}
	for _, s := range ho.sessions {
		req.Sessions = append(req.Sessions, ngap.PDUSessionResourceSetupItemHOReq{ID: s.id, SNSSAI: s.snssai, Transfer: s.setup})
	}
	if err := u.sendN2(tg, t.stream, req); err != nil {
		u.log.Warn("Handover Request not sent", "err", err)
		u.handoverFailed(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHOFailureInTarget})
		return
	}
	a.stats.handovers.Add(1)
	u.handoverTime.Start(&u.exec, a.cfg.timers.Handover, u.handoverExpired)
}

// handleHandoverTarget adapts a message of the target's connection: before
// the Handover Request Acknowledge it has no RAN UE NGAP ID, so only the
// AMF UE NGAP ID and the gNB are checked.
func onTarget[M ngap.Message](id func(M) int64, h func(u *ue, t *ranUE, m M)) ngapHandler {
	return func(a *AMF, g *gnb, msg ngap.Message) {
		m := msg.(M)
		amfID := id(m)
		t := a.ranUEs.Get(amfID)
		if (t == nil || t.gnb != g) && a.replayedGone(g) {
			return
		}
		if t == nil || t.gnb != g {
			g.log.Info("handover message for an unknown target connection", "amf_ue_ngap_id", amfID)
			g.errorIndication(causeUnknownLocalID, &amfID, nil)
			return
		}
		u := t.ue
		u.postMessage(g, g.takeStamp(), func() { h(u, t, m) })
	}
}

// onHandoverRequestAcknowledge: the target admitted the UE (TS 38.413
// §8.4.2.2, TS 23.502 §4.9.1.3.2 steps 10-12).
func (u *ue) onHandoverRequestAcknowledge(t *ranUE, m *ngap.HandoverRequestAcknowledge) {
	a := u.amf
	if t != u.target || t.state != legHandoverPreparing || u.st.proc != procHandoverPreparation {
		u.errorIndication(t.gnb, causeNotCompatibleState, &m.AMFUENGAPID, &m.RANUENGAPID)
		return
	}
	t.ranID = m.RANUENGAPID
	if old, ok := t.gnb.addUE(t); !ok {
		u.targetLost(t)
		return
	} else if old != nil && old != t {
		a.ranUEs.delete(old)
		old.ue.post(func() { old.ue.connectionLost(old) })
	}
	t.state = legHandoverPrepared
	smf := a.smfService()
	cmd := &ngap.HandoverCommand{AMFUENGAPID: u.ran.amfID, RANUENGAPID: u.ran.ranID, HandoverType: u.ho.hoType,
		TargetToSourceTransparentContainer: m.TargetToSourceTransparentContainer}
	admitted := u.ho.sessions[:0]
	for _, it := range m.Admitted {
		s := u.sessions[it.ID]
		if s == nil || s.smfOr(smf) == nil || !u.ho.has(it.ID) {
			continue
		}
		upd, err := u.updateN2(smf, s, models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQ_ACK, it.Transfer,
			func(d *models.Smf_PDUSess_SmContextUpdateData) { d.HoState = models.Smf_PDUSess_HoState_PREPARED })
		if err != nil || upd == nil || len(upd.N2SmInfo) == 0 {
			u.log.Info("SMF refused the prepared handover", "pdu_session_id", it.ID, "err", err)
			continue
		}
		admitted = append(admitted, hoSession{id: it.ID, snssai: s.snssai, command: upd.N2SmInfo})
		cmd.Handover = append(cmd.Handover, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: upd.N2SmInfo})
	}
	for _, it := range m.FailedToSetup {
		s := u.sessions[it.ID]
		if s == nil || s.smfOr(smf) == nil {
			continue
		}
		upd, err := u.updateN2(smf, s, models.Smf_PDUSess_N2SmInfoType_HANDOVER_RES_ALLOC_FAIL, it.Transfer, nil)
		if err == nil && upd != nil && len(upd.N2SmInfo) > 0 {
			cmd.ToRelease = append(cmd.ToRelease, ngap.PDUSessionResourceItem{ID: it.ID, Transfer: upd.N2SmInfo})
		}
	}
	u.ho.sessions = admitted
	if len(admitted) == 0 && len(m.Admitted)+len(m.FailedToSetup) > 0 {
		// TS 23.502 §4.9.1.3.2: nothing to hand over: the handover fails.
		u.handoverFailed(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHOFailureInTarget})
		return
	}
	r := u.ran
	if err := u.sendN2(r.gnb, r.stream, cmd); err != nil {
		u.log.Warn("Handover Command not sent", "err", err)
		u.handoverFailed(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHOFailureInTarget})
		return
	}
	u.fire(evHandoverCommand)
	u.handoverTime.Start(&u.exec, a.cfg.timers.Handover, u.handoverExpired)
}

func (ho *handoverProc) has(id uint8) bool {
	for _, s := range ho.sessions {
		if s.id == id {
			return true
		}
	}
	return false
}

// onHandoverFailure: the target could not accept the UE (TS 38.413
// §8.4.2.3): the source hears Handover Preparation Failure and keeps the
// UE.
func (u *ue) onHandoverFailure(t *ranUE, m *ngap.HandoverFailure) {
	if t != u.target {
		return
	}
	u.log.Info("handover failed at the target", "cause", m.Cause.String())
	u.forgetTarget(t)
	u.handoverFailed(m.Cause)
}

// onHandoverCancel: the source gives the handover up (TS 38.413 §8.4.6).
func (u *ue) onHandoverCancel(r *ranUE, m *ngap.HandoverCancel) {
	ack := &ngap.HandoverCancelAcknowledge{AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID}
	if err := u.sendN2(r.gnb, r.stream, ack); err != nil {
		u.log.Warn("Handover Cancel Acknowledge not sent", "err", err)
	}
	if r != u.ran || (u.st.proc != procHandoverPreparation && u.st.proc != procHandoverExecution) {
		return
	}
	u.log.Info("handover cancelled by the source", "cause", m.Cause.String())
	u.cancelHandover(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverCancelled})
}

// onUplinkRANStatusTransfer relays the source's PDCP status to the target
// (TS 38.413 §8.4.7, §8.4.8).
func (u *ue) onUplinkRANStatusTransfer(r *ranUE, m *ngap.UplinkRANStatusTransfer) {
	t := u.target
	switch {
	case r == u.ran && t != nil && t.state == legHandoverPrepared:
	case r.handedOver && u.ran != nil && u.ran.state == legContext:
		// The target's Handover Notify, on its own association, came
		// first: the status still goes to the target, now serving the
		// UE (TS 38.413 §8.4.7-8.4.8 do not order it against Notify).
		t = u.ran
	default:
		return
	}
	dl := &ngap.DownlinkRANStatusTransfer{AMFUENGAPID: t.amfID, RANUENGAPID: t.ranID, DRBs: m.DRBs}
	if err := u.sendN2(t.gnb, t.stream, dl); err != nil {
		u.log.Warn("Downlink RAN Status Transfer not sent", "err", err)
	}
}

// onHandoverNotify: the UE is at the target (TS 38.413 §8.4.3, TS 23.502
// §4.9.1.3.3 steps 5-11): the target leg serves the UE, the SMFs switch
// the downlink, the source's connection is released.
func (u *ue) onHandoverNotify(t *ranUE, m *ngap.HandoverNotify) {
	a := u.amf
	if t != u.target || u.st.proc != procHandoverExecution {
		// TS 38.413 §10.4: not compatible with the state (a Notify after
		// a cancel, or without a handover).
		u.errorIndication(t.gnb, causeNotCompatibleState, &m.AMFUENGAPID, &m.RANUENGAPID)
		return
	}
	u.handoverTime.Stop()
	src := u.ran
	src.handedOver = true
	t.state = legContext
	t.loc, t.tai = m.UserLocation, m.UserLocation.TAI
	t.ambrSent = true // the Handover Request carried the UE-AMBR
	u.ran, u.target = t, nil
	sessions := u.ho.sessions
	u.ho = handoverProc{}
	u.fire(evHandoverComplete)
	smf := a.smfService()
	for _, hs := range sessions {
		s := u.sessions[hs.id]
		if s == nil {
			continue
		}
		if _, err := u.updateN2(smf, s, "", nil, func(d *models.Smf_PDUSess_SmContextUpdateData) {
			d.HoState = models.Smf_PDUSess_HoState_COMPLETED
		}); err != nil {
			u.log.Info("handover completion not taken by the SMF", "pdu_session_id", hs.id, "err", err)
			continue
		}
		s.up = upActive
	}
	a.stats.handoversDone.Add(1)
	u.released = append(u.released, src)
	if err := src.sendContextRelease(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkSuccessfulHandover}); err != nil {
		u.log.Debug("release of the source connection not sent", "err", err)
		u.forgetConnection(src)
	}
	u.deliverPending()
}

// handoverExpired is the expiry of handoverTime, one step of the UE.
func (u *ue) handoverExpired() {
	u.beginStep()
	u.handoverTimedOut()
	u.endStep()
}

// handoverTimedOut: the guard of the preparation or execution ran out (the
// AMF's counterpart of TNGRELOCprep / TNGRELOCoverall, TS 38.413 §8.4.1.2).
func (u *ue) handoverTimedOut() {
	switch u.st.proc {
	case procHandoverPreparation:
		u.log.Info("handover preparation timed out")
		u.handoverFailed(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkTNGRELOCprepExpiry})
	case procHandoverExecution:
		u.log.Info("handover execution timed out (no Handover Notify)")
		u.cancelHandover(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkTNGRELOCoverallExpiry})
	}
}

// handoverFailed ends a preparation that failed: the source hears Handover
// Preparation Failure and keeps serving the UE (TS 23.502 §4.9.1.3.2).
func (u *ue) handoverFailed(cause ngap.Cause) {
	if r := u.ran; r != nil && u.st.proc == procHandoverPreparation {
		r.gnb.handoverPreparationFailure(r, cause)
	}
	u.cancelHandover(cause)
}

// cancelHandover ends the handover with the UE on the source: the SMFs
// restore the source path, the target's connection is released.
func (u *ue) cancelHandover(cause ngap.Cause) {
	if u.st.proc != procHandoverPreparation && u.st.proc != procHandoverExecution {
		return
	}
	// Counted first: whoever sees a message of the cancel sees the count.
	u.amf.stats.handoverFailures.Add(1)
	u.handoverTime.Stop()
	if t := u.target; t != nil {
		u.releaseTarget(t, cause)
	}
	u.cancelAtSMFs(u.ho.sessions)
	u.ho = handoverProc{}
	u.fire(evHandoverCancel)
	u.deliverPending()
}

// cancelAtSMFs tells the SMFs the handover of sessions is off (hoState
// CANCELLED, TS 23.502 §4.9.1.4).
func (u *ue) cancelAtSMFs(sessions []hoSession) {
	smf := u.amf.smfService()
	for _, hs := range sessions {
		if s := u.sessions[hs.id]; s != nil {
			if _, err := u.updateN2(smf, s, "", nil, func(d *models.Smf_PDUSess_SmContextUpdateData) {
				d.HoState = models.Smf_PDUSess_HoState_CANCELLED
			}); err != nil {
				u.log.Info("handover cancel not taken by the SMF", "pdu_session_id", hs.id, "err", err)
			}
		}
	}
}

// releaseTarget releases the target's connection: with its NGAP ID pair
// once acknowledged, with the AMF UE NGAP ID alone before (TS 38.413
// §9.2.2.5).
func (u *ue) releaseTarget(t *ranUE, cause ngap.Cause) {
	u.target = nil
	if t.state == legHandoverPreparing {
		u.amf.ranUEs.delete(t)
		cmd := &ngap.UEContextReleaseCommand{AMFUENGAPID: t.amfID, AMFIDOnly: true, Cause: cause}
		if err := u.sendN2(t.gnb, t.stream, cmd); err != nil {
			u.log.Debug("release of the target not sent", "err", err)
		}
		return
	}
	u.released = append(u.released, t)
	if err := t.sendContextRelease(cause); err != nil {
		u.log.Debug("release of the target not sent", "err", err)
		u.forgetConnection(t)
	}
}

// forgetTarget frees the target connection's IDs without signalling (the
// target failed the handover and holds no context).
func (u *ue) forgetTarget(t *ranUE) {
	u.amf.ranUEs.delete(t)
	t.gnb.removeUE(t)
	if u.target == t {
		u.target = nil
	}
}

// targetLost: the target's connection went away (its association dropped,
// or released) during the handover.
func (u *ue) targetLost(t *ranUE) {
	if u.target != t {
		return
	}
	u.target = nil
	u.log.Info("handover target lost")
	u.handoverFailed(ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHOFailureInTarget})
}

// handoverAbandoned: the source's connection went away during the
// handover; the handover ends (the UE comes back with a service request).
func (u *ue) handoverAbandoned() {
	u.amf.stats.handoverFailures.Add(1)
	if t := u.target; t != nil {
		u.releaseTarget(t, ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverCancelled})
	}
	u.cancelAtSMFs(u.ho.sessions)
	u.ho = handoverProc{}
	u.handoverTime.Stop()
}

// handoverPreparationFailure answers Handover Required with cause (TS
// 38.413 §8.4.1.3).
func (g *gnb) handoverPreparationFailure(r *ranUE, cause ngap.Cause) {
	f := &ngap.HandoverPreparationFailure{AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, Cause: cause}
	if err := r.ue.sendN2(g, r.stream, f); err != nil {
		g.log.Warn("Handover Preparation Failure not sent", "err", err)
	}
}

// gnbByID finds the gNB a handover targets by its global ID.
func (a *AMF) gnbByID(id ngap.GlobalGNBID) *gnb {
	a.mu.Lock()
	defer a.mu.Unlock()
	for g := range a.gnbs {
		if n := g.node.Load(); n != nil && n.id == id {
			return g
		}
	}
	return nil
}

// updateN2 is Nsmf_PDUSession_UpdateSMContext for session s with N2 SM
// information of typ (none when typ is ""), and whatever more edit sets.
func (u *ue) updateN2(smf sbi.PDUSession, s *pduSession, typ models.Smf_PDUSess_N2SmInfoType, n2 []byte,
	edit func(*models.Smf_PDUSess_SmContextUpdateData)) (*sbi.SMContextUpdated, error) {
	d := &models.Smf_PDUSess_SmContextUpdateData{UeLocation: u.userLocation()}
	if typ != "" {
		d.N2SmInfo = &models.RefToBinaryData{ContentId: sbi.ContentIDN2SM}
		d.N2SmInfoType = typ
	}
	if edit != nil {
		edit(d)
	}
	if smf = s.smfOr(smf); smf == nil {
		return nil, errors.New("no SMF")
	}
	ctx, cancel := u.amf.callCtx()
	defer cancel()
	upd, err := smf.UpdateSMContext(ctx, s.ref, &sbi.SMContextUpdate{Data: d, N2SmInfo: n2})
	if err != nil && sbi.CauseOf(err) == sbi.CauseContextNotFound {
		u.forgetSession(s)
	}
	return upd, err
}

// targetIDModel is the NG-RAN Target ID of TS 29.518 §6.1.6.2.29.
func targetIDModel(t ngap.TargetRANNodeID) *models.Amf_Comm_NgRanTargetId {
	plmn := sbi.PLMNToModel(t.GlobalGNBID.PLMN)
	taiPLMN := sbi.PLMNToModel(t.SelectedTAI.PLMN)
	return &models.Amf_Comm_NgRanTargetId{
		RanNodeId: &models.GlobalRanNodeId{
			PlmnId: &plmn,
			GNbId:  &models.GNbId{BitLength: int32(t.GlobalGNBID.BitLen), GNBValue: gnbIDHex(t.GlobalGNBID)},
		},
		Tai: &models.Tai{PlmnId: &taiPLMN, Tac: taiHex(t.SelectedTAI.TAC)},
	}
}

// gnbIDHex is a gNB ID in TS 29.571 hexadecimal: whole nibbles, padded at
// the most significant end.
func gnbIDHex(id ngap.GlobalGNBID) string {
	nibbles := (int(id.BitLen) + 3) / 4
	return fmt.Sprintf("%0*x", nibbles, id.GNBID)
}

func taiHex(tac uint32) string { return fmt.Sprintf("%06x", tac) }
