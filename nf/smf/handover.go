package smf

import (
	"fmt"
	"net/http"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// The SMF's part of handover (TS 23.502 §4.9.1).
//
// Xn (§4.9.1.2.2): PATH_SWITCH_REQ carries the target's tunnel; the UPF
// switches the downlink FAR to it and sends End Marker on the old path
// (SNDEM, TS 29.244 §8.2.31), so the source knows the last packet went.
//
// N2 (§4.9.1.3): the session is prepared (HANDOVER_REQUIRED: the setup
// transfer for the target, the UPF's UL tunnel unchanged), then the target's
// acknowledgement (HANDOVER_REQ_ACK) gives its DL tunnel, and the downlink
// is handled by one of two modes (smf.mobility.handoverData):
//
//   - forwarding, the 3GPP way: a forwarding PDR with a CHOOSE F-TEID and a
//     FAR to the target's DL forwarding tunnel are created at the UPF; the
//     Handover Command transfer gives the source that F-TEID, so the source
//     sends what it buffered, and what keeps arriving from the UPF, back
//     through the UPF to the target (the "hairpin").
//   - smart, L25GC's: the downlink FAR turns to BUFF: the UPF holds the
//     session's downlink from here on, and nothing goes to the source.
//
// Handover Notify (COMPLETED) switches the downlink FAR to the target's
// tunnel with SNDEM: in smart mode the UPF sends what it holds to the target,
// in order, before any new packet; in forwarding mode the End Marker on the
// old path tells the source the forwarding is over, and the forwarding rules
// go after a short hold. CANCELLED puts the downlink back on the source's
// tunnel (the buffer drains there) and removes forwarding rules.

// hoState is where the session stands in an N2 handover.
type hoState uint8

const (
	hoNone      hoState = iota
	hoPreparing         // HANDOVER_REQUIRED answered
	hoPrepared          // HANDOVER_REQ_ACK answered: the target's tunnel is known
)

// Rule IDs of the indirect forwarding tunnel (TS 29.244 §5.2.1).
const (
	pdrForward = 3
	farForward = 3
	// chooseForward is the CHOOSE ID of the forwarding F-TEID (distinct
	// from the session's UL one, TS 29.244 §5.2.3.1).
	chooseForward = 2
)

// handover handles the N2 SM information of a handover step. Runs on c's
// executor.
func (s *SMF) handover(c *smContext, typ models.Smf_PDUSess_N2SmInfoType, b []byte) (*sbi.SMContextUpdated, error) {
	switch typ {
	case models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ:
		t, err := ngap.DecodePathSwitchRequestTransfer(b)
		if err != nil {
			return nil, n2Error("path switch request transfer: %v", err)
		}
		settingUp := c.settingUp()
		if !c.canMove() && !settingUp || !t.DLTunnel.Addr.Is4() {
			return nil, n2Error("path switch for a session in state %s (tunnel %v)", c.state, t.DLTunnel.Addr)
		}
		if err := s.switchDownlink(c, t.DLTunnel); err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "%v", err)
		}
		if settingUp {
			// The UE moved before the source's PDU Session Resource Setup
			// Response reached the SMF: the two gNBs' associations are read
			// apart, so the Path Switch Request can overtake it (TS 23.502
			// §4.9.1.2.2 does not order them). The target has the session's
			// resources now; the late response is dropped with the source's
			// connection.
			s.userPlaneUp(c)
		}
		ul := c.ulTunnel
		ack, err := ngap.EncodePathSwitchRequestAcknowledgeTransfer(&ngap.PathSwitchRequestAcknowledgeTransfer{ULTunnel: &ul})
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
		}
		s.stats.pathSwitches.Add(1)
		return updated(nil, ack, models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_REQ_ACK, c.upCnx), nil

	case models.Smf_PDUSess_N2SmInfoType_PATH_SWITCH_SETUP_FAIL:
		// TS 23.502 §4.9.1.2.2 step 2: the target could not set the session
		// up: its user plane is deactivated.
		if _, err := ngap.DecodePathSwitchRequestSetupFailedTransfer(b); err != nil {
			return nil, n2Error("path switch setup failed transfer: %v", err)
		}
		return s.deactivateUP(c)

	case models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQUIRED:
		if _, err := ngap.DecodeHandoverRequiredTransfer(b); err != nil {
			return nil, n2Error("handover required transfer: %v", err)
		}
		if !c.canMove() {
			return nil, n2Error("handover of a session in state %s, user plane %s", c.state, c.upCnx)
		}
		n2, err := c.setupRequestTransfer()
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
		}
		s.dropForwarding(c) // a previous handover's rules, if still held
		c.ho = hoPreparing
		out := updated(nil, n2, models.Smf_PDUSess_N2SmInfoType_PDU_RES_SETUP_REQ, c.upCnx)
		out.Data.HoState = models.Smf_PDUSess_HoState_PREPARING
		return out, nil

	case models.Smf_PDUSess_N2SmInfoType_HANDOVER_REQ_ACK:
		t, err := ngap.DecodeHandoverRequestAcknowledgeTransfer(b)
		if err != nil {
			return nil, n2Error("handover request acknowledge transfer: %v", err)
		}
		if c.ho != hoPreparing || !t.DLTunnel.Addr.Is4() {
			return nil, n2Error("handover acknowledge for a session not being prepared (tunnel %v)", t.DLTunnel.Addr)
		}
		cmd := ngap.HandoverCommandTransfer{}
		switch s.cfg.mobility.HandoverData {
		case HandoverSmart:
			// L25GC smart buffering: the UPF holds the downlink from now.
			if err := s.holdDownlink(c); err != nil {
				return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "%v", err)
			}
		default:
			if t.DLForwardingTunnel != nil && t.DLForwardingTunnel.Addr.Is4() {
				fwd, err := s.createForwarding(c, *t.DLForwardingTunnel)
				if err != nil {
					return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "%v", err)
				}
				cmd.DLForwardingTunnel = &fwd
				cmd.QoSFlowsToBeForwarded = []uint8{defaultQFI}
			}
		}
		n2, err := ngap.EncodeHandoverCommandTransfer(&cmd)
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
		}
		c.ho = hoPrepared
		c.hoTarget = t.DLTunnel
		out := updated(nil, n2, models.Smf_PDUSess_N2SmInfoType_HANDOVER_CMD, c.upCnx)
		out.Data.HoState = models.Smf_PDUSess_HoState_PREPARED
		return out, nil

	case models.Smf_PDUSess_N2SmInfoType_HANDOVER_RES_ALLOC_FAIL:
		t, err := ngap.DecodeHandoverResourceAllocationUnsuccessfulTransfer(b)
		if err != nil {
			return nil, n2Error("handover resource allocation unsuccessful transfer: %v", err)
		}
		s.log.Info("target could not admit the PDU session", "supi", c.supi, "psi", c.psi, "cause", t.Cause.String())
		c.ho = hoNone
		n2, err := ngap.EncodeHandoverPreparationUnsuccessfulTransfer(&ngap.HandoverPreparationUnsuccessfulTransfer{Cause: t.Cause})
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%v", err)
		}
		return updated(nil, n2, models.Smf_PDUSess_N2SmInfoType_HANDOVER_PREP_FAIL, c.upCnx), nil
	}
	return nil, n2Error("N2 SM information type %q not supported", typ)
}

// canMove: the session has a user plane to hand over.
func (c *smContext) canMove() bool {
	return (c.state == stActive || c.state == stModifying) && c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATED && c.upSEID != 0
}

// settingUp: the session's user plane was requested from the AN (an
// establishment or a reactivation) and its setup response has not come.
func (c *smContext) settingUp() bool {
	return (c.state == stWaitN2Setup || c.state == stActive || c.state == stModifying) &&
		c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATING && c.upSEID != 0
}

// handoverDone handles hoState COMPLETED (TS 23.502 §4.9.1.3.3 step 7) and
// CANCELLED (§4.9.1.4). Runs on c's executor.
func (s *SMF) handoverDone(c *smContext, st models.Smf_PDUSess_HoState) (*sbi.SMContextUpdated, error) {
	if c.ho == hoNone {
		return nil, sbi.NewProblem(http.StatusConflict, sbi.CauseN2SMError, "no handover of session %d in progress", c.psi)
	}
	prepared := c.ho == hoPrepared
	c.ho = hoNone
	switch {
	case st == models.Smf_PDUSess_HoState_COMPLETED && prepared:
		if err := s.switchDownlink(c, c.hoTarget); err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseUPFNotResponding, "%v", err)
		}
		s.stats.handovers.Add(1)
		if c.fwd {
			// The source may still send what it held: the forwarding
			// rules stay a moment (TS 23.502 §4.9.1.3.3 step 16: the
			// indirect data forwarding tunnels are released after a
			// timer).
			c.fwdTimer.Start(&c.ue.exec, s.cfg.mobility.ForwardingHold, func() { s.forwardingHeld(c) })
		}
	case st == models.Smf_PDUSess_HoState_COMPLETED:
		return nil, sbi.NewProblem(http.StatusConflict, sbi.CauseN2SMError, "handover of session %d completed before it was prepared", c.psi)
	default: // CANCELLED: the downlink back to the source.
		if prepared && s.cfg.mobility.HandoverData == HandoverSmart && c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATED {
			if err := s.forwardDownlink(c, c.dlTunnel); err != nil {
				s.log.Warn("downlink back to the source not set", "supi", c.supi, "psi", c.psi, "err", err)
			}
		}
		s.dropForwarding(c)
	}
	c.hoTarget = ngap.GTPTunnel{}
	out := updated(nil, nil, "", c.upCnx)
	out.Data.HoState = st
	return out, nil
}

// switchDownlink points the downlink FAR at tunnel dl with SNDEM: the UPF
// sends End Marker on the old tunnel after its last packet (TS 29.244
// §8.2.31, TS 29.281 §7.3.2). A session without a downlink tunnel yet (its
// setup response overtaken) has no old path to end. Runs on c's executor.
func (s *SMF) switchDownlink(c *smContext, dl ngap.GTPTunnel) error {
	if err := s.pointDownlink(c, dl, c.dlTunnel.Addr.IsValid()); err != nil {
		return err
	}
	c.dlTunnel = dl
	return nil
}

// holdDownlink makes the UPF buffer the session's downlink while the UE
// moves (smart buffering): BUFF without NOCP (no paging) and without the
// BAR (the UPF's own bounds, not the idle-mode count).
func (s *SMF) holdDownlink(c *smContext) error {
	act := pfcp.ActionBuffer
	return s.modifyN4(c, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: farDownlink, ApplyAction: &act}},
	})
}

// createForwarding installs the indirect data forwarding tunnel (TS 23.502
// §4.9.1.3.2 step 11): packets the source sends to the UPF's new F-TEID
// go to the target's DL forwarding tunnel. It returns the UPF's F-TEID.
func (s *SMF) createForwarding(c *smContext, target ngap.GTPTunnel) (ngap.GTPTunnel, error) {
	ohr := pfcp.OuterHeaderRemovalGTPUUDPIPv4
	resp, err := s.sendModification(c, "forwarding tunnel", &pfcp.SessionModificationRequest{
		CreatePDRs: []pfcp.CreatePDR{{
			ID:         pdrForward,
			Precedence: defaultPrecedence,
			PDI: pfcp.PDI{
				SourceInterface: pfcp.InterfaceAccess,
				FTEID:           &pfcp.FTEID{Choose: true, ChooseID: chooseForward},
			},
			OuterHeaderRemoval: &ohr,
			FARID:              farForward,
		}},
		CreateFARs: []pfcp.CreateFAR{{
			ID:          farForward,
			ApplyAction: pfcp.ActionForward,
			Forwarding: &pfcp.ForwardingParameters{
				Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{
					Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: target.TEID, IPv4: target.Addr,
				},
			},
		}},
	})
	if err != nil {
		return ngap.GTPTunnel{}, err
	}
	c.fwd = true
	for _, p := range resp.CreatedPDRs {
		if p.ID == pdrForward && p.LocalFTEID != nil {
			t := ngap.GTPTunnel{Addr: p.LocalFTEID.IPv4, TEID: p.LocalFTEID.TEID}
			if !t.Addr.IsValid() {
				t.Addr = c.upf.n3
			}
			return t, nil
		}
	}
	s.dropForwarding(c)
	return ngap.GTPTunnel{}, fmt.Errorf("%w: upf %s: no Created PDR with the forwarding F-TEID", errN4, c.upf.name)
}

// forwardingHeld removes the indirect forwarding rules once they have been
// held after the handover (fwdTimer). Runs on c's executor, a step of its
// own.
func (s *SMF) forwardingHeld(c *smContext) {
	s.dropForwarding(c)
	s.endStep(c.ue)
}

// dropForwarding removes the indirect forwarding rules, if any.
func (s *SMF) dropForwarding(c *smContext) {
	c.fwdTimer.Stop()
	if !c.fwd || c.upSEID == 0 {
		c.fwd = false
		return
	}
	c.fwd = false
	if err := s.modifyN4(c, &pfcp.SessionModificationRequest{RemovePDRs: []uint16{pdrForward}, RemoveFARs: []uint32{farForward}}); err != nil {
		s.log.Warn("forwarding tunnel not removed", "supi", c.supi, "psi", c.psi, "err", err)
	}
}
