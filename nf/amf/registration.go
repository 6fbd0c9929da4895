package amf

import (
	"errors"
	"fmt"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/kdf"
)

// regStep is where a running registration (TS 24.501 §5.5.1, TS 23.502
// §4.2.2.2.2) stands; the common procedures it runs have their own step
// (ue.common).
type regStep uint8

const (
	regCommon    regStep = iota // identification, authentication, security mode or SBI calls
	regAccepting                // Registration Accept sent, T3550 running
)

// registrationProc is the data of a running registration.
type registrationProc struct {
	step regStep
	req  *nas.RegistrationRequest
	// initialIntegrity: the Registration Request passed the integrity check
	// with the UE's current context (TS 24.501 §5.5.1.2.2, §4.4.6).
	initialIntegrity bool
	// byGUTI: the UE identified itself with a 5G-GUTI, so an identity
	// request may follow an authentication failure (TS 24.501 §5.4.1.3.7).
	byGUTI bool
	// fromIdle: the request opened the N2 connection (CM-IDLE before it),
	// as opposed to a registration over a connection that carries the UE's
	// user plane (after a handover).
	fromIdle bool
}

// commonStep is the common procedure (TS 24.501 §5.4) a specific procedure
// (registration, service request) waits in.
type commonStep uint8

const (
	commonNone           commonStep = iota
	commonIdentification            // Identity Request sent, T3570 running
	commonAuthentication            // Authentication Request sent, T3560 running
	commonSecurityMode              // Security Mode Command sent, T3560 running
)

type commonProc struct{ step commonStep }

// resetCommon abandons any common procedure in progress.
func (u *ue) resetCommon() {
	u.common = commonProc{}
	u.auth = authProc{}
	u.smc = securityModeProc{}
}

// onRegistrationRequest starts (or restarts) registration.
func (u *ue) onRegistrationRequest(m *nas.RegistrationRequest, integrity bool) {
	if u.st.proc == procRegistration {
		// TS 24.501 §5.5.1.2.8 e)/f): a new REGISTRATION REQUEST during the
		// procedure aborts the old one and the new one is progressed.
		u.log.Debug("registration restarted")
	}
	if integrity && len(m.NASMessageContainer) > 0 {
		// TS 24.501 §4.4.6: the complete request is in the ciphered
		// container of the integrity protected one.
		if full, ok := u.openInitial(m.NASMessageContainer).(*nas.RegistrationRequest); ok {
			m = full
		}
	}
	u.endProcedureData(u.st.proc)
	if u.supi == "" && m.MobileIdentity.Type == nas.IdentitySUCI {
		u.suci = m.MobileIdentity.SUCI // names the UE in the procedure's start line
	}
	if !u.fire(evRegistrationStart) {
		u.sendStatus(nas.CauseMessageTypeNotCompatibleWithState)
		return
	}
	u.reg = registrationProc{req: m, initialIntegrity: integrity, fromIdle: u.ran.state != legContext}
	if m.UESecurityCapability != nil {
		u.ueSecCap = *m.UESecurityCapability
		u.hasSecCap = true
	}
	switch m.RegistrationType {
	case nas.RegistrationInitial, nas.RegistrationMobilityUpdating, nas.RegistrationPeriodicUpdating:
	default:
		// Emergency and SNPN onboarding registration are not offered.
		u.rejectRegistration(nas.Cause5GSServicesNotAllowed)
		return
	}
	switch m.MobileIdentity.Type {
	case nas.IdentitySUCI:
		u.suci = m.MobileIdentity.SUCI
		u.startAuthentication(nil)
	case nas.IdentityGUTI:
		u.reg.byGUTI = true
		if integrity && u.sec != nil && u.supi != "" {
			// TS 24.501 §5.5.1.2.2 / TS 33.501 §6.4.6: the message verified
			// with the stored 5G NAS security context; no new
			// authentication or security mode control is needed.
			u.completeRegistration()
			return
		}
		// Unknown GUTI or failed integrity check: TS 24.501 §5.4.3.2.
		u.startIdentification()
	default:
		u.startIdentification()
	}
}

// completeRegistration runs the steps after NAS security is in place:
// TS 23.502 §4.2.2.2.2 steps 14 (Nudm_UECM_Registration, Nudm_SDM_Get),
// allowed NSSAI (Nnssf_NSSelection, TS 23.501 §5.15.5.2.1), then the
// Registration Accept.
// applyAmData takes the access and mobility subscription data the AMF
// keeps for the UE: the subscribed S-NSSAIs and the UE-AMBR. It fails, and
// changes nothing, when the subscribed NSSAI is unusable.
func (u *ue) applyAmData(am *models.Udm_SDM_AccessAndMobilitySubscriptionData) error {
	subscribed, err := sbi.SubscribedFromNssai(am.Nssai)
	if err != nil {
		return err
	}
	u.subscribed = subscribed
	u.ueAMBR = nil
	if am.SubscribedUeAmbr != nil {
		ambr, err := ambrFromModel(am.SubscribedUeAmbr.Uplink, am.SubscribedUeAmbr.Downlink)
		if err != nil {
			// The UE-AMBR is optional on N2 (TS 38.413 §9.2.1.1): go without.
			u.log.Warn("subscribed UE-AMBR unusable", "err", err)
		} else {
			u.ueAMBR = &ambr
		}
	}
	return nil
}

func (u *ue) completeRegistration() {
	a := u.amf
	req := u.reg.req
	if req == nil || u.st.proc != procRegistration {
		return
	}
	u.common.step = commonNone
	ctx, cancel := a.callCtx()
	defer cancel()
	plmn := u.servingPLMN()
	if u.st.rm != rmRegistered || u.subscribed == nil {
		reg := &models.Udm_UECM_Amf3GppAccessRegistration{
			AmfInstanceId:          a.instanceID,
			DeregCallbackUri:       a.apiRoot + deregNotifyPath + u.supi,
			InitialRegistrationInd: req.RegistrationType == nas.RegistrationInitial,
			Guami:                  guamiModel(a.cfg.guamis[0]),
			RatType:                models.RatType_NR,
			Pei:                    u.pei,
			Supi:                   u.supi,
		}
		if _, err := a.deps.UECM.RegisterAMF3GPPAccess(ctx, u.supi, reg); err != nil {
			u.log.Info("Nudm_UECM_Registration failed", "err", err)
			u.rejectRegistration(causeForSBIError(err))
			return
		}
		am, err := a.deps.SDM.GetAmData(ctx, u.supi, plmn)
		if err != nil {
			u.log.Info("Nudm_SDM_Get am-data failed", "err", err)
			u.rejectRegistration(causeForSBIError(err))
			return
		}
		if err := u.applyAmData(am); err != nil {
			u.log.Info("subscribed NSSAI unusable", "err", err)
			u.rejectRegistration(nas.CauseProtocolErrorUnspecified)
			return
		}
	}
	tai := u.ran.tai
	info, err := a.deps.NSSF.SelectForRegistration(ctx, u.supi, req.RequestedNSSAI, u.subscribed, tai)
	if err != nil {
		u.log.Info("Nnssf_NSSelection failed", "err", err)
		if errors.Is(err, sbi.ErrSNSSAINotSupported) {
			u.rejectRegistration(nas.CauseNoNetworkSlicesAvailable) // TS 24.501 §5.5.1.2.5 #62
		} else {
			u.rejectRegistration(causeForSBIError(err))
		}
		return
	}
	allowed, err := allowedFromNSSF(info)
	if err != nil || len(allowed) == 0 {
		u.log.Info("no allowed NSSAI", "err", err)
		u.rejectRegistration(nas.CauseNoNetworkSlicesAvailable)
		return
	}
	u.allowedNSSAI = allowed
	u.sendRegistrationAccept()
}

// sendRegistrationAccept assigns a new 5G-GUTI (TS 24.501 §5.5.1.2.4: the
// AMF shall assign one on initial registration; tern refreshes it on every
// registration, TS 33.501 §6.12.3) and sends Registration Accept, inside
// an Initial Context Setup Request when the gNB has no UE context yet
// (TS 23.502 §4.2.2.2.2 step 21, TS 38.413 §8.3.1).
func (u *ue) sendRegistrationAccept() {
	a := u.amf
	if u.guti != nil {
		if u.oldGUTI != nil {
			a.gutis.release(u.oldGUTI.TMSI, u)
		}
		u.oldGUTI = u.guti
	}
	u.guti = &identity.GUTI{GUAMI: a.cfg.guamis[0], TMSI: a.gutis.allocate(u, &a.tmsiKey)}

	guti := *u.guti
	t3512 := nas.GPRSTimer3Of(a.cfg.timers.T3512)
	u.taiList = u.registrationArea()
	accept := &nas.RegistrationAccept{
		Result:       nas.Registered3GPP,
		GUTI:         &guti,
		TAIList:      u.taiList,
		AllowedNSSAI: u.allowedNSSAI,
		T3512:        &t3512,
	}
	if u.reg.req != nil {
		// TS 24.501 §5.5.1.3.4 (§5.5.1.2.4 alike): a PDU session status in
		// the request is answered with the network's, after the sessions
		// the UE no longer has are released.
		accept.PDUSessionStatus = u.alignSessions(u.reg.req.PDUSessionStatus)
	}
	plain, err := nas.Encode(accept)
	if err != nil {
		u.log.Error("encode Registration Accept", "err", err)
		u.releaseAndRemove(causeNASUnspecified)
		return
	}
	hdr := nas.IntegrityProtectedAndCiphered
	if u.ran.state == legContext {
		err = u.sendNAS(plain, hdr)
	} else {
		err = u.sendInitialContextSetup(plain, hdr, nil)
	}
	if err != nil {
		u.log.Warn("Registration Accept not sent", "err", err)
	}
	u.reg.step = regAccepting
	u.startNASTimer(timerT3550, plain, hdr)
}

// sendInitialContextSetup sends Initial Context Setup Request (TS 38.413
// §8.3.1) with the NAS PDU, the PDU sessions to set up (a service request)
// and KgNB (TS 33.501 §A.9) derived from KAMF and the uplink NAS COUNT of
// the last uplink NAS message accepted: the Security Mode Complete after a
// security mode control, or the integrity-checked initial NAS message when
// an existing context was reused.
func (u *ue) sendInitialContextSetup(plain []byte, hdr nas.SecurityHeaderType, sessions []ngap.PDUSessionResourceSetupItemSUReq) error {
	r := u.ran
	pdu, err := u.protect(plain, hdr)
	if err != nil {
		return fmt.Errorf("protect: %w", err)
	}
	ulCount, _ := u.sec.Count(nas.Uplink)
	kgnb := kdf.KgNB(u.kamf, ulCount, kdf.AccessType3GPP)
	req := &ngap.InitialContextSetupRequest{
		AMFUENGAPID:  r.amfID,
		RANUENGAPID:  r.ranID,
		GUAMI:        u.guti.GUAMI,
		AllowedNSSAI: u.allowedNSSAI,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(
			u.ueSecCap.EA, u.ueSecCap.IA, u.ueSecCap.EEA, u.ueSecCap.EIA),
		NASPDU:                       pdu,
		PDUSessionResourceSetupItems: sessions,
	}
	if len(sessions) > 0 {
		// TS 38.413 §9.2.2.1: the UE-AMBR is mandatory with PDU sessions
		// to set up. A subscription without one has no aggregate limit:
		// the top of the NGAP range says so.
		ambr := ngap.AMBR{UL: maxNGAPBitRate, DL: maxNGAPBitRate}
		if u.ueAMBR != nil {
			ambr = *u.ueAMBR
		}
		req.UEAggregateMaxBitRate = &ambr
	}
	copy(req.SecurityKey[:], kgnb)
	if err := u.sendN2(r.gnb, r.stream, req); err != nil {
		return err
	}
	// TS 33.501 §6.9.2.1.1: the KgNB goes with NCC 0 and is the SYNC-input
	// of the first NH.
	u.nh, u.ncc = kgnb, 0
	r.state = legContext
	r.ambrSent = req.UEAggregateMaxBitRate != nil
	return nil
}

// registrationArea is the TAI list of a Registration Accept: the TAs of the
// UE's gNB that we serve (at most 16, one partial list, TS 24.501
// §9.11.3.9), current TAI first.
func (u *ue) registrationArea() []identity.TAI {
	cur := u.ran.tai
	list := make([]identity.TAI, 0, 4)
	if u.amf.cfg.servesTAI(cur) {
		list = append(list, cur)
	}
	for _, t := range u.ran.gnb.tais() {
		if len(list) == 16 {
			break
		}
		if t != cur {
			list = append(list, t)
		}
	}
	return list
}

// onRegistrationComplete ends registration (TS 24.501 §5.5.1.2.4): T3550
// stops, the old 5G-GUTI is released and the UE is RM-REGISTERED.
func (u *ue) onRegistrationComplete() {
	if u.st.proc != procRegistration || u.reg.step != regAccepting {
		u.log.Debug("Registration Complete outside registration, ignored")
		return
	}
	req := u.reg.req
	fromIdle := u.reg.fromIdle
	u.registrationAccepted()
	u.amf.stats.registrations.Add(1)
	u.log.Debug("UE registered", "guti", u.guti.String())
	if fromIdle && req != nil && !req.FollowOnRequest && req.UplinkDataStatus == nil && len(u.page.pending) == 0 &&
		(req.RegistrationType == nas.RegistrationPeriodicUpdating || req.RegistrationType == nas.RegistrationMobilityUpdating) {
		// TS 24.501 §5.5.1.3.4, TS 23.502 §4.2.2.2.2 step 23: a UE that
		// came out of CM-IDLE only to update its registration, with no
		// follow-on request pending, goes back to CM-IDLE.
		u.releaseConnection(causeNASNormalRelease)
	}
}

// registrationAccepted ends a registration whose accept went out: with
// Registration Complete, or after T3550's last expiry (TS 24.501
// §5.5.1.2.8 d): the new 5G-GUTI is valid, the UE counts as registered).
func (u *ue) registrationAccepted() {
	u.stopNASTimer()
	if u.oldGUTI != nil {
		u.amf.gutis.release(u.oldGUTI.TMSI, u)
		u.oldGUTI = nil
	}
	u.reg = registrationProc{}
	u.resetCommon()
	u.fire(evRegistrationComplete)
}

// endRegistration abandons a running registration; the UE keeps the RM
// state it had.
func (u *ue) endRegistration() {
	u.endProcedureData(procRegistration)
	u.fire(evRegistrationEnd)
}

// rejectRegistration sends Registration Reject (TS 24.501 §5.5.1.2.5) and
// releases the UE.
func (u *ue) rejectRegistration(cause nas.Cause5GMM) {
	u.log.Info("registration rejected", "cause", cause.String())
	u.sendNASMessage(&nas.RegistrationReject{Cause: cause})
	u.amf.stats.regRejects.Add(1)
	u.outcome = procedures.Rejected
	u.endRegistration()
	u.releaseAndRemove(causeNASUnspecified)
}

// servingPLMN is the PLMN the UE is served in: that of its TAI when we
// serve it, else that of our primary GUAMI.
func (u *ue) servingPLMN() identity.PLMN {
	if u.ran != nil && u.amf.cfg.plmnIndex(u.ran.tai.PLMN) >= 0 {
		return u.ran.tai.PLMN
	}
	return u.amf.cfg.guamis[0].PLMN
}

// causeForSBIError maps an SBI failure during registration to the 5GMM cause
// of the Registration Reject (TS 24.501 §5.5.1.2.5, Annex A).
func causeForSBIError(err error) nas.Cause5GMM {
	switch sbi.CauseOf(err) {
	case sbi.CauseUserNotFound, sbi.CauseDataNotFound, sbi.CauseUnknown5GSSubscription:
		// The subscriber has no 5GS subscription here.
		return nas.Cause5GSServicesNotAllowed
	case sbi.CauseAuthenticationRejected:
		return nas.CauseIllegalUE
	case sbi.CauseServingNetworkNotAuthorized:
		return causeServingNetworkNotAuthorized
	}
	return nas.CauseProtocolErrorUnspecified
}

// causeServingNetworkNotAuthorized is 5GMM cause #73 (TS 24.501 Annex A).
const causeServingNetworkNotAuthorized nas.Cause5GMM = 73

func guamiModel(g identity.GUAMI) *models.Guami {
	b := g.AMFID.Bytes()
	return &models.Guami{
		PlmnId: &models.PlmnIdNid{Mcc: g.PLMN.MCC, Mnc: g.PLMN.MNC},
		AmfId:  fmt.Sprintf("%02x%02x%02x", b[0], b[1], b[2]),
	}
}

// allowedFromNSSF reads the allowed NSSAI for 3GPP access.
func allowedFromNSSF(info *models.Nssf_NSSel_AuthorizedNetworkSliceInfo) ([]identity.SNSSAI, error) {
	if info == nil {
		return nil, errors.New("nssf: no authorized network slice info")
	}
	var out []identity.SNSSAI
	for _, an := range info.AllowedNssaiList {
		if an.AccessType != "" && an.AccessType != models.AccessType_3_GPP_ACCESS {
			continue
		}
		for _, s := range an.AllowedSnssaiList {
			if s.AllowedSnssai == nil {
				continue
			}
			sn, err := sbi.SNSSAIFromModel(*s.AllowedSnssai)
			if err != nil {
				return nil, fmt.Errorf("nssf allowed snssai: %w", err)
			}
			out = append(out, sn)
		}
	}
	return out, nil
}

// rejectCommon ends the specific procedure a common procedure ran for
// after a failure that rejects it: Registration Reject or Service Reject
// (TS 24.501 §5.5.1.2.5, §5.6.1.5) with cause.
func (u *ue) rejectCommon(cause nas.Cause5GMM) {
	if u.st.proc == procServiceRequest {
		u.rejectService(cause)
		return
	}
	u.rejectRegistration(cause)
}

// openInitial deciphers and decodes the NAS message container of an
// initial NAS message that verified with the UE's context (TS 24.501
// §4.4.6); nil when it does not hold a readable message (the outer
// message's cleartext IEs are used then).
func (u *ue) openInitial(container []byte) nas.Message {
	if u.sec == nil {
		return nil
	}
	plain, err := u.sec.OpenContainer(container, nas.Uplink)
	if err != nil {
		u.log.Info("NAS message container not readable", "err", err)
		return nil
	}
	m, err := nas.Decode(plain)
	if err != nil {
		u.log.Info("NAS message container undecodable", "err", err)
		return nil
	}
	return m
}
