package amf

import (
	"errors"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// serveGNB reads one association until it fails or the AMF closes. Non-UE
// procedures run on the reader; UE-associated ones run on the UE's executor, inline
// here when the UE has nothing else queued (ue.runFromReader).
func (a *AMF) serveGNB(g *gnb) {
	defer a.workers.Done()
	defer a.dropGNB(g)
	// sctp.Serve runs the handler on the transport's receive goroutine
	// where it can: one fewer handoff per message.
	err := sctp.Serve(g.conn, func(m sctp.Message) {
		if m.PPID != ngap.PPID && m.PPID != 0 {
			// TS 38.412 §7: NGAP is PPID 60; anything else is not ours.
			g.log.Debug("dropping SCTP message with foreign PPID", "ppid", m.PPID)
			return
		}
		a.handleNGAP(g, m.Data)
	})
	if !a.isClosed() {
		g.log.Info("N2 association closed", "err", err)
	}
}

// dropGNB forgets an association: every UE connection on it is gone
// (TS 23.502 §4.2.6: the AN release is implicit).
func (a *AMF) dropGNB(g *gnb) {
	g.conn.Close()
	a.life.Lock()
	delete(a.gnbs, g)
	a.life.Unlock()
	if g.setupDone {
		a.stats.gnbs.Add(-1)
	}
	g.mu.Lock()
	g.dead = true
	ues := make([]*ranUE, 0, len(g.ues))
	for _, r := range g.ues {
		ues = append(ues, r)
	}
	clear(g.ues)
	g.mu.Unlock()
	for _, r := range ues {
		r.ue.post(func() { r.ue.connectionLost(r) })
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
	if !g.setupDone {
		if m, ok := msg.(*ngap.NGSetupRequest); ok {
			a.handleNGSetup(g, m)
			return
		}
		// TS 38.413 §8.7.1.1: NG Setup is the first NGAP procedure.
		g.log.Info("NGAP message before NG Setup", "procedure", msg.ProcedureCode())
		g.errorIndication(causeNotCompatibleState, nil, nil)
		return
	}
	switch m := msg.(type) {
	case *ngap.NGSetupRequest:
		a.handleNGSetup(g, m)
	case *ngap.InitialUEMessage:
		a.handleInitialUEMessage(g, m)
	case *ngap.UplinkNASTransport:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			pdu, loc := m.NASPDU, m.UserLocation
			r.ue.runFromReader(func() { r.ue.handleUplinkNAS(r, pdu, loc) })
		}
	case *ngap.InitialContextSetupResponse:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			r.ue.runFromReader(func() { r.ue.onInitialContextSetupResponse(r) })
		}
	case *ngap.InitialContextSetupFailure:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			cause := m.Cause
			r.ue.runFromReader(func() { r.ue.onInitialContextSetupFailure(r, cause) })
		}
	case *ngap.UEContextReleaseRequest:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			cause := m.Cause
			r.ue.runFromReader(func() { r.ue.onContextReleaseRequest(r, cause) })
		}
	case *ngap.UEContextReleaseComplete:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			ids := m.PDUSessionIDs
			r.ue.runFromReader(func() { r.ue.onContextReleaseComplete(r, ids) })
		}
	case *ngap.PDUSessionResourceSetupResponse:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			r.ue.runFromReader(func() { r.ue.onPDUSessionResourceSetupResponse(r, m) })
		}
	case *ngap.PDUSessionResourceModifyResponse:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			r.ue.runFromReader(func() { r.ue.onPDUSessionResourceModifyResponse(r, m) })
		}
	case *ngap.PDUSessionResourceReleaseResponse:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			r.ue.runFromReader(func() { r.ue.onPDUSessionResourceReleaseResponse(r, m) })
		}
	case *ngap.NASNonDeliveryIndication:
		if r := a.lookupRANUE(g, m.AMFUENGAPID, m.RANUENGAPID); r != nil {
			g.log.Info("NAS non delivery", "amf_ue_ngap_id", m.AMFUENGAPID, "cause", m.Cause.String())
		}
	case *ngap.ErrorIndication:
		// TS 38.413 §8.7.5.2: the receiver takes it into account; we only log.
		attrs := []any{}
		if m.Cause != nil {
			attrs = append(attrs, "cause", m.Cause.String())
		}
		if m.AMFUENGAPID != nil {
			attrs = append(attrs, "amf_ue_ngap_id", *m.AMFUENGAPID)
		}
		g.log.Info("error indication from gNB", attrs...)
	default:
		// A message we decode but that the gNB must not send to an AMF
		// (e.g. a Downlink NAS Transport): TS 38.413 §10.4 logical error.
		g.log.Info("unexpected NGAP message", "procedure", msg.ProcedureCode(), "type", msg.MessageType().String())
		amfID, ranID := ueIDsOf(msg)
		g.errorIndication(causeNotCompatibleState, amfID, ranID)
	}
}

// ueIDsOf returns the UE NGAP IDs of a UE-associated message we did not
// expect, so the Error Indication can carry them.
func ueIDsOf(m ngap.Message) (amfID, ranID *int64) {
	switch v := m.(type) {
	case *ngap.DownlinkNASTransport:
		return &v.AMFUENGAPID, &v.RANUENGAPID
	case *ngap.InitialContextSetupRequest:
		return &v.AMFUENGAPID, &v.RANUENGAPID
	case *ngap.UEContextReleaseCommand:
		return &v.AMFUENGAPID, &v.RANUENGAPID
	case *ngap.PDUSessionResourceSetupRequest:
		return &v.AMFUENGAPID, &v.RANUENGAPID
	case *ngap.PDUSessionResourceModifyRequest:
		return &v.AMFUENGAPID, &v.RANUENGAPID
	case *ngap.PDUSessionResourceReleaseCommand:
		return &v.AMFUENGAPID, &v.RANUENGAPID
	}
	return nil, nil
}

// lookupRANUE finds the UE-associated connection of a message, answering
// unknown or inconsistent IDs with an Error Indication (TS 38.413 §10.6).
func (a *AMF) lookupRANUE(g *gnb, amfID, ranID int64) *ranUE {
	r := a.ranUEs.Get(amfID)
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
	var plmnOK, taiOK, sliceOK bool
	var served []identity.TAI
	for _, ta := range req.SupportedTAs {
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
	var cause *ngap.Cause
	switch {
	case !plmnOK, !taiOK:
		// No broadcast PLMN (or no TAI) we serve: misc unknown-PLMN-or-SNPN,
		// as Open5GS and free5GC answer.
		cause = &causeUnknownPLMN
	case !sliceOK:
		cause = &causeSliceNotSupported
	}
	if cause != nil {
		wait := ngap.TimeToWait5s
		fail := &ngap.NGSetupFailure{Cause: *cause, TimeToWait: &wait}
		g.log.Info("NG Setup rejected", "cause", cause.String(), "gnb_id", req.GlobalRANNodeID.GNBID)
		a.stats.ngSetupFailures.Add(1)
		if err := g.send(0, fail); err != nil {
			g.log.Warn("NG Setup Failure not sent", "err", err)
		}
		return
	}
	if !g.setupDone {
		a.stats.gnbs.Add(1)
	}
	g.setupDone = true
	g.tais.Store(&served)
	a.stats.ngSetups.Add(1)
	if err := g.send(0, a.ngSetupResponse()); err != nil {
		g.log.Warn("NG Setup Response not sent", "err", err)
		return
	}
	g.log.Info("NG Setup complete", "name", req.RANNodeName, "gnb_id", req.GlobalRANNodeID.GNBID, "tais", len(served))
}

// handleInitialUEMessage starts a UE-associated logical NG-connection
// (TS 38.413 §8.6.1). A message naming a 5G-GUTI we assigned goes to that
// UE context, which verifies it; anything else gets a new context.
func (a *AMF) handleInitialUEMessage(g *gnb, m *ngap.InitialUEMessage) {
	loc := m.UserLocation
	pdu := m.NASPDU
	var msg nas.Message
	if inner, _, err := nas.PeekPlain(pdu); err == nil {
		msg, _ = nas.Decode(inner)
	}
	if tmsi, ok := a.initialTMSI(msg); ok {
		if u := a.gutis.lookup(tmsi); u != nil {
			ranID := m.RANUENGAPID
			u.runFromReader(func() { u.onInitialUEMessageForKnownGUTI(g, ranID, loc, pdu, msg) })
			return
		}
	}
	r := a.newRANUE(g, nil, m.RANUENGAPID, loc)
	if r == nil {
		return
	}
	u := r.ue
	u.runFromReader(func() { u.onInitialUEMessage(r, pdu, msg) })
}

// initialTMSI returns the 5G-TMSI of an initial NAS message when it names a
// 5G-GUTI of one of our GUAMIs.
func (a *AMF) initialTMSI(m nas.Message) (uint32, bool) {
	var id nas.MobileIdentity
	switch v := m.(type) {
	case *nas.RegistrationRequest:
		id = v.MobileIdentity
	case *nas.DeregistrationRequestUEOriginating:
		id = v.MobileIdentity
	case *nas.ServiceRequest:
		for _, g := range a.cfg.guamis {
			if g.AMFID.SetID == v.STMSI.SetID && g.AMFID.Pointer == v.STMSI.Pointer {
				return v.STMSI.TMSI, true
			}
		}
		return 0, false
	default:
		return 0, false
	}
	if id.Type != nas.IdentityGUTI || !a.cfg.isOurGUAMI(id.GUTI.GUAMI) {
		return 0, false
	}
	return id.GUTI.TMSI, true
}

// newUE makes an empty UE context in 5GMM-DEREGISTERED.
func (a *AMF) newUE() *ue {
	a.stats.contexts.Add(1)
	return &ue{amf: a, log: a.log}
}

// newRANUE allocates an AMF UE NGAP ID (TS 38.413 §9.3.3.1) and registers
// the connection for u, or for a new UE context when u is nil. It returns
// nil when the association is already gone. The caller makes it u's current
// connection on u's executor.
func (a *AMF) newRANUE(g *gnb, u *ue, ranID int64, loc ngap.UserLocationNR) *ranUE {
	id := a.nextAMFUEID.Add(1) & maxAMFUENGAPID
	r := &ranUE{gnb: g, ue: u, amfID: id, ranID: ranID, tai: loc.TAI, loc: loc}
	r.stream = g.streamFor(id)
	g.mu.Lock()
	if g.dead {
		g.mu.Unlock()
		return nil
	}
	if r.ue == nil {
		r.ue = a.newUE()
	}
	old := g.ues[ranID]
	g.ues[ranID] = r
	a.ranUEs.put(r)
	g.mu.Unlock()
	if old != nil {
		// TS 38.413 §8.6.1.2 does not allow reuse of a RAN UE NGAP ID in
		// use; the gNB has evidently forgotten the old connection.
		a.ranUEs.delete(old)
		old.ue.post(func() { old.ue.connectionLost(old) })
	}
	return r
}
