// Package udm is the unified data management NF: Nudm_UEAuthentication
// (ARPF/SIDF: SUCI de-concealment and 5G HE AV generation), Nudm_SDM and
// Nudm_UECM for 3GPP access, over a Nudr_DataRepository.
package udm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
)

// UDM implements sbi.UDMUEAuthentication, sbi.SubscriberDataManagement and
// sbi.UEContextManagement.
type UDM struct {
	cfg     Config
	hnKeys  []suci.HomeNetworkKey
	schemes map[suci.Scheme]bool // schemes with at least one key
	udr     sbi.DataRepository
	log     *slog.Logger
	rand    func([]byte) error // RAND source; crypto/rand outside tests

	mu         sync.Mutex
	amf3GPP    map[string]*models.Udm_UECM_Amf3GppAccessRegistration // serving AMF per SUPI
	authEvents map[string]*models.Udm_UEAU_AuthEvent                 // last authentication result per SUPI
	notifier   AMFNotifier                                           // the serving AMF's callbacks (SetAMF)
	smf        sbi.SDMNotifier                                       // the SMF's sm-data subscription (SetSMF)
	// rec, when set, gets the record of every UE whose state changed,
	// under mu, before the request that changed it is answered
	// (record.go).
	rec Recorder
}

var (
	_ sbi.UDMUEAuthentication      = (*UDM)(nil)
	_ sbi.SubscriberDataManagement = (*UDM)(nil)
	_ sbi.UEContextManagement      = (*UDM)(nil)
)

// New returns a UDM reading subscription data from udr.
func New(cfg Config, udr sbi.DataRepository, logger *slog.Logger) (*UDM, error) {
	keys, err := cfg.keys()
	if err != nil {
		return nil, err
	}
	if udr == nil {
		return nil, errors.New("udm: nil data repository")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	u := &UDM{
		cfg:        cfg,
		hnKeys:     keys,
		schemes:    map[suci.Scheme]bool{suci.SchemeNull: true},
		udr:        udr,
		log:        logger.With("nf", "udm"),
		rand:       func(b []byte) error { _, err := rand.Read(b); return err },
		amf3GPP:    make(map[string]*models.Udm_UECM_Amf3GppAccessRegistration),
		authEvents: make(map[string]*models.Udm_UEAU_AuthEvent),
	}
	for _, k := range keys {
		u.schemes[k.Scheme] = true
	}
	return u, nil
}

// checkSUPI is the first step of every operation on a UE's resource:
// a SUPI in the URI (path variable param, "{supi}" or "{ueId}") that is no
// IMSI SUPI is refused before anything is looked up, 400
// MANDATORY_IE_INCORRECT naming it (TS 29.500 §5.2.7.2), not sent on to
// the UDR to come back as a missing resource.
func checkSUPI(param, supi string) error {
	if _, err := identity.ParseSUPI(supi); err != nil {
		return sbi.IncorrectIE(param, "%v", err)
	}
	return nil
}

// fromUDR is the UDM's answer when its data repository refused or failed
// a request about supi: the subscriber or the data missing as such (404
// USER_NOT_FOUND, DATA_NOT_FOUND), anything else the UDM's own failure
// (500 SYSTEM_FAILURE): the UDR's detail (its resource paths, its
// transport's errors) goes to the log, not to the consumer.
func (u *UDM) fromUDR(op string, supi string, err error) error {
	switch sbi.CauseOf(err) {
	case sbi.CauseUserNotFound:
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, "%s", supi)
	case sbi.CauseDataNotFound:
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "%s", supi)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("udm: %s: %w", op, err)
	}
	u.log.Warn("data repository request failed", "op", op, "supi", supi, "err", err)
	return sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: the data repository failed (%d %s)", op, sbi.StatusOf(err), sbi.CauseOf(err))
}

// resolveSUPI returns the SUPI for a SUPI or SUCI (SIDF, TS 33.501 §6.12.3).
func (u *UDM) resolveSUPI(supiOrSuci string) (string, error) {
	if strings.HasPrefix(supiOrSuci, "suci-") {
		s, err := suci.Parse(supiOrSuci)
		if err != nil {
			return "", sbi.IncorrectIE("{supiOrSuci}", "%v", err)
		}
		if !u.schemes[s.Scheme] {
			return "", sbi.NewProblem(http.StatusNotImplemented, sbi.CauseUnsupportedProtectionScheme, "no home network key for protection scheme %v", s.Scheme)
		}
		supi, err := suci.Deconceal(s, u.hnKeys)
		switch {
		case errors.Is(err, suci.ErrMalformed):
			return "", sbi.IncorrectIE("{supiOrSuci}", "%v", err)
		case errors.Is(err, suci.ErrUnsupportedScheme):
			return "", sbi.NewProblem(http.StatusNotImplemented, sbi.CauseUnsupportedProtectionScheme, "%v", err)
		case err != nil:
			// Unknown key identifier or a MAC tag that does not verify: the
			// SUCI cannot be attributed to any subscriber.
			return "", sbi.NewProblem(http.StatusForbidden, sbi.CauseAuthenticationRejected, "de-concealing SUCI: %v", err)
		}
		return supi, nil
	}
	if err := checkSUPI("{supiOrSuci}", supiOrSuci); err != nil {
		return "", err
	}
	return supiOrSuci, nil
}

func decodeHex(field, s string, n int) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != n {
		return nil, fmt.Errorf("%s: want %d hex octets", field, n)
	}
	return b, nil
}

// GenerateAuthData implements sbi.UDMUEAuthentication (TS 33.501 §6.1.3.2
// steps 2-3, TS 29.503 §5.4.2.2).
func (u *UDM) GenerateAuthData(ctx context.Context, supiOrSuci string, req *models.Udm_UEAU_AuthenticationInfoRequest) (*models.Udm_UEAU_AuthenticationInfoResult, error) {
	// TS 29.503 AuthenticationInfoRequest: servingNetworkName and
	// ausfInstanceId are mandatory.
	if req == nil {
		req = &models.Udm_UEAU_AuthenticationInfoRequest{}
	}
	var m mandatory
	m.need("/servingNetworkName", req.ServingNetworkName != "")
	m.need("/ausfInstanceId", req.AusfInstanceId != "")
	if err := m.err(); err != nil {
		return nil, err
	}
	snn := req.ServingNetworkName
	if err := kdf.ValidateSNN(snn); err != nil {
		return nil, sbi.IncorrectIE("/servingNetworkName", "%v", err)
	}
	supi, err := u.resolveSUPI(supiOrSuci)
	if err != nil {
		return nil, err
	}
	log := u.log.With("supi", supi)

	sub, err := u.udr.QueryAuthenticationSubscription(ctx, supi)
	if err != nil {
		return nil, u.fromUDR("authentication-subscription", supi, err)
	}
	if sub.AuthenticationMethod != models.Udr_DR_AuthMethod_5_G_AKA {
		return nil, sbi.NewProblem(http.StatusNotImplemented, sbi.CauseAuthenticationRejected, "%s: authentication method %q not supported", supi, sub.AuthenticationMethod)
	}
	k, err1 := decodeHex("encPermanentKey", sub.EncPermanentKey, milenage.KeyLen)
	opc, err2 := decodeHex("encOpcKey", sub.EncOpcKey, milenage.KeyLen)
	amf, err3 := decodeHex("authenticationManagementField", sub.AuthenticationManagementField, milenage.AMFLen)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: authentication subscription: %v", supi, err)
	}

	// The read handed out an SQN for this vector (see
	// sbi.DataRepository.QueryAuthenticationSubscription). TS 33.102
	// §6.3.5, TS 33.501 §6.1.3.3.2: after a synchronisation failure,
	// verify AUTS, then let the UDR raise SQN_HE to SQN_MS and allocate
	// the next SQN; the one read is then skipped.
	seq := sub.SequenceNumber
	if ri := req.ResynchronizationInfo; ri != nil {
		rnd, err := decodeHex("rand", ri.Rand, milenage.KeyLen)
		if err != nil {
			return nil, sbi.IncorrectIE("/resynchronizationInfo/rand", "%v", err)
		}
		auts, err := decodeHex("auts", ri.Auts, milenage.AUTSLen)
		if err != nil {
			return nil, sbi.IncorrectIE("/resynchronizationInfo/auts", "%v", err)
		}
		ms, err := milenage.VerifyAUTS(k, opc, rnd, auts)
		if err != nil {
			log.Warn("resynchronisation rejected", "err", err)
			return nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseAuthenticationRejected, "%s: AUTS: %v", supi, err)
		}
		log.Info("resynchronising SQN", "sqnMS", ms)
		if seq, err = u.udr.AllocateSQN(ctx, supi, fmt.Sprintf("%012x", ms)); err != nil {
			return nil, u.fromUDR("SQN allocation", supi, err)
		}
	}
	if seq == nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: the authentication subscription has no sequenceNumber", supi)
	}
	sqn, err := decodeHex("sequenceNumber.sqn", seq.Sqn, milenage.SQNLen)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: %v", supi, err)
	}

	// TS 33.501 §6.1.3.2 step 2: the AMF separation bit (TS 33.102 Annex H)
	// is set to 1 in 5G AVs.
	amf[0] |= 0x80
	rnd := make([]byte, milenage.KeyLen)
	if err := u.rand(rnd); err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "RAND: %v", err)
	}
	av, err := milenage.Generate(k, opc, rnd, sqn, amf)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: milenage: %v", supi, err)
	}
	// TS 33.501 §6.1.3.2 step 3, Annex A.2 and A.4.
	xresStar := kdf.RESStar(av.CK, av.IK, snn, rnd, av.XRES)
	kausf := kdf.KAUSF(av.CK, av.IK, snn, av.SQNXorAK())
	log.Debug("generated 5G HE AV", "sqn", seq.Sqn)

	return &models.Udm_UEAU_AuthenticationInfoResult{
		AuthType: models.Udm_UEAU_AuthType_5_G_AKA,
		Supi:     supi,
		AuthenticationVector: &models.Udm_UEAU_AuthenticationVector{
			AvType:   models.Udm_UEAU_AvType_5_G_HE_AKA,
			Rand:     hex.EncodeToString(rnd),
			Autn:     hex.EncodeToString(av.AUTN),
			XresStar: hex.EncodeToString(xresStar),
			Kausf:    hex.EncodeToString(kausf),
		},
	}, nil
}

// ConfirmAuth implements sbi.UDMUEAuthentication (TS 33.501 §6.1.4.1a):
// the last authentication result per SUPI is kept for later procedures.
func (u *UDM) ConfirmAuth(ctx context.Context, supi string, event *models.Udm_UEAU_AuthEvent) error {
	if err := checkSUPI("{supi}", supi); err != nil {
		return err
	}
	// TS 29.503 AuthEvent: nfInstanceId, success, timeStamp, authType and
	// servingNetworkName are mandatory (success, a boolean, cannot be
	// told absent from false here).
	if event == nil {
		event = &models.Udm_UEAU_AuthEvent{}
	}
	var m mandatory
	m.need("/nfInstanceId", event.NfInstanceId != "")
	m.need("/timeStamp", event.TimeStamp != nil)
	m.need("/authType", event.AuthType != "")
	m.need("/servingNetworkName", event.ServingNetworkName != "")
	if err := m.err(); err != nil {
		return err
	}
	ev := *event
	u.mu.Lock()
	defer u.mu.Unlock()
	if ev.AuthRemovalInd {
		delete(u.authEvents, supi)
	} else {
		u.authEvents[supi] = &ev
	}
	u.recordLocked(supi)
	return nil
}

// LastAuthEvent returns the last authentication result the AUSF reported
// for supi, if any.
func (u *UDM) LastAuthEvent(supi string) (models.Udm_UEAU_AuthEvent, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ev, ok := u.authEvents[supi]
	if !ok {
		return models.Udm_UEAU_AuthEvent{}, false
	}
	return *ev, true
}

// mandatory collects the mandatory members a request body lacks, by
// their JSON Pointers.
type mandatory []string

func (m *mandatory) need(pointer string, present bool) {
	if !present {
		*m = append(*m, pointer)
	}
}

// err is 400 MANDATORY_IE_MISSING naming every member lacking, or nil.
func (m mandatory) err() error {
	if len(m) == 0 {
		return nil
	}
	return sbi.MissingIE(m...)
}

// GetAmData implements sbi.SubscriberDataManagement (TS 29.503 §5.2.2.2.3).
func (u *UDM) GetAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_AccessAndMobilitySubscriptionData, error) {
	if err := checkSUPI("{supi}", supi); err != nil {
		return nil, err
	}
	am, err := u.udr.QueryAmData(ctx, supi, u.servingPLMN(supi, plmn))
	if err != nil {
		return nil, u.fromUDR("am-data", supi, err)
	}
	// The UDR and UDM models are the same TS 29.503 type under two names.
	out := models.Udm_SDM_AccessAndMobilitySubscriptionData(*am)
	return &out, nil
}

// GetNSSAI implements sbi.SubscriberDataManagement (TS 29.503 §5.2.2.2.2).
func (u *UDM) GetNSSAI(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_Nssai, error) {
	if err := checkSUPI("{supi}", supi); err != nil {
		return nil, err
	}
	am, err := u.udr.QueryAmData(ctx, supi, u.servingPLMN(supi, plmn))
	if err != nil {
		return nil, u.fromUDR("am-data", supi, err)
	}
	if am.Nssai == nil {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "%s: no subscribed NSSAI", supi)
	}
	return am.Nssai, nil
}

// GetSmData implements sbi.SubscriberDataManagement (TS 29.503 §5.2.2.2.5).
func (u *UDM) GetSmData(ctx context.Context, supi string, q sbi.SmDataQuery) ([]models.Udm_SDM_SessionManagementSubscriptionData, error) {
	if err := checkSUPI("{supi}", supi); err != nil {
		return nil, err
	}
	q.PLMN = u.servingPLMN(supi, q.PLMN)
	sm, err := u.udr.QuerySmData(ctx, supi, q)
	if err != nil {
		return nil, u.fromUDR("sm-data", supi, err)
	}
	if len(sm.IndividualSmSubsData) == 0 {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "%s: no SM subscription data for the query", supi)
	}
	return sm.IndividualSmSubsData, nil
}

// GetSmfSelectData implements sbi.SubscriberDataManagement (TS 29.503
// §5.2.2.2.7).
func (u *UDM) GetSmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_SmfSelectionSubscriptionData, error) {
	if err := checkSUPI("{supi}", supi); err != nil {
		return nil, err
	}
	sel, err := u.udr.QuerySmfSelectData(ctx, supi, u.servingPLMN(supi, plmn))
	if err != nil {
		return nil, u.fromUDR("smf-selection-subscription-data", supi, err)
	}
	if len(sel.SubscribedSnssaiInfos) == 0 {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "%s: no SMF selection subscription data", supi)
	}
	return &models.Udm_SDM_SmfSelectionSubscriptionData{
		SupportedFeatures:     sel.SupportedFeatures,
		SubscribedSnssaiInfos: sel.SubscribedSnssaiInfos,
		SharedSnssaiInfosId:   sel.SharedSnssaiInfosId,
		HssGroupId:            sel.HssGroupId,
	}, nil
}

// RegisterAMF3GPPAccess implements sbi.UEContextManagement (TS 29.503
// §5.3.2.2.2). A registration from a different AMF replaces the old one;
// created says whether there was none (201 Created, else 200 OK).
//
// Departure from the spec: the UDM does not notify the old AMF
// (Nudm_UECM_DeregistrationNotification) because the interfaces carry no
// callbacks; the AMF detects the change when its context is reused.
func (u *UDM) RegisterAMF3GPPAccess(ctx context.Context, supi string, reg *models.Udm_UECM_Amf3GppAccessRegistration) (created bool, err error) {
	if err := checkSUPI("{ueId}", supi); err != nil {
		return false, err
	}
	if err := sbi.CheckAmf3GppAccessRegistration(reg); err != nil {
		return false, err
	}
	r := *reg
	r.Supi = supi
	if r.RegistrationTime == nil {
		now := time.Now()
		r.RegistrationTime = &now
	}
	u.mu.Lock()
	old := u.amf3GPP[supi]
	u.amf3GPP[supi] = &r
	u.mu.Unlock()
	// 404 USER_NOT_FOUND for an unknown subscriber. The check comes after
	// the registration is recorded, so that a subscriber deleted meanwhile
	// by another process is either seen missing here or, its deletion
	// arriving later, finds the registration to deregister
	// (SubscriberChanged): never neither.
	if _, err := u.udr.QueryAmData(ctx, supi, registrationPLMN(&r)); err != nil {
		u.mu.Lock()
		if u.amf3GPP[supi] == &r {
			if old != nil {
				u.amf3GPP[supi] = old
			} else {
				delete(u.amf3GPP, supi)
			}
			// A record of supi taken meanwhile may hold the registration
			// refused here.
			u.recordLocked(supi)
		}
		u.mu.Unlock()
		return false, u.fromUDR("am-data", supi, err)
	}
	u.mu.Lock()
	u.recordLocked(supi)
	u.mu.Unlock()
	if old != nil && old.AmfInstanceId != r.AmfInstanceId {
		u.log.Info("serving AMF changed", "supi", supi, "old", old.AmfInstanceId, "new", r.AmfInstanceId)
	}
	return old == nil, nil
}

// UpdateAMF3GPPAccess implements sbi.UEContextManagement: the PATCH of the
// AMF's registration for 3GPP access with an
// Amf3GppAccessRegistrationModification (TS 29.503 §5.3.2.4). Its guami
// names the AMF: one that is no longer the serving AMF (another GUAMI) is
// refused with 403 INVALID_GUAMI, so that it cannot change or remove its
// successor's registration.
//
// Only a modification with purgeFlag removes the registration (the
// serving AMF's own deregistration, TS 23.502 §4.2.2.3.2 step 4). Without
// it the registration stays and the members the modification carries
// (pei, imsVoPs, backupAmfInfo, epsInterworkingInfo, the capabilities it
// sets) replace the registration's, as the merge patch says (RFC 7396).
// A capability patched to false or a member to null cannot be told from
// one left out once decoded into the model, so those keep their value.
func (u *UDM) UpdateAMF3GPPAccess(ctx context.Context, supi string, mod *models.Udm_UECM_Amf3GppAccessRegistrationModification) error {
	if err := checkSUPI("{ueId}", supi); err != nil {
		return err
	}
	// TS 29.503 Amf3GppAccessRegistrationModification: guami is mandatory.
	if mod == nil || mod.Guami == nil {
		return sbi.MissingIE("/guami")
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	reg, ok := u.amf3GPP[supi]
	if !ok {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "%s: no AMF registered for 3GPP access", supi)
	}
	if reg.Guami != nil && !sameGUAMI(mod.Guami, reg.Guami) {
		return sbi.NewProblem(http.StatusForbidden, sbi.CauseInvalidGUAMI, "%s: the registered AMF has another GUAMI", supi)
	}
	if mod.PurgeFlag {
		delete(u.amf3GPP, supi)
		u.recordLocked(supi)
		return nil
	}
	// A new value, not the stored one changed: readers use a registration
	// they took from the map after unlocking (SubscriberChanged).
	r := *reg
	if mod.Pei != "" {
		r.Pei = mod.Pei
	}
	if mod.ImsVoPs != "" {
		r.ImsVoPs = mod.ImsVoPs
	}
	if mod.BackupAmfInfo != nil {
		r.BackupAmfInfo = mod.BackupAmfInfo
	}
	if mod.EpsInterworkingInfo != nil {
		r.EpsInterworkingInfo = mod.EpsInterworkingInfo
	}
	r.UeSrvccCapability = r.UeSrvccCapability || mod.UeSrvccCapability
	r.UeMINTCapability = r.UeMINTCapability || mod.UeMINTCapability
	u.amf3GPP[supi] = &r
	u.recordLocked(supi)
	return nil
}

// GetAMF3GPPAccess implements sbi.UEContextManagement.
func (u *UDM) GetAMF3GPPAccess(ctx context.Context, supi string) (*models.Udm_UECM_Amf3GppAccessRegistration, error) {
	if err := checkSUPI("{ueId}", supi); err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.amf3GPP[supi]
	if !ok {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "%s: no AMF registered for 3GPP access", supi)
	}
	c := *r
	return &c, nil
}

func sameGUAMI(a, b *models.Guami) bool {
	return a.AmfId == b.AmfId && (a.PlmnId == nil) == (b.PlmnId == nil) &&
		(a.PlmnId == nil || a.PlmnId.Mcc == b.PlmnId.Mcc && a.PlmnId.Mnc == b.PlmnId.Mnc)
}

// registrationPLMN is the PLMN of the registering AMF's GUAMI, the serving
// PLMN the UDR is asked about; zero when the registration has none.
func registrationPLMN(r *models.Udm_UECM_Amf3GppAccessRegistration) identity.PLMN {
	if r.Guami == nil || r.Guami.PlmnId == nil {
		return identity.PLMN{}
	}
	p, err := identity.ParsePLMN(r.Guami.PlmnId.Mcc + r.Guami.PlmnId.Mnc)
	if err != nil {
		return identity.PLMN{}
	}
	return p
}

// servingPLMN is the PLMN a Nudm_SDM read is about: the one asked for, or,
// absent (the plmn-id query parameter is optional, TS 29.503
// §6.1.3.5.3.1), the PLMN of the serving AMF's registration, else the
// home PLMN read from an IMSI with a 2-digit MNC. Nudr_DR names the
// serving PLMN in the resource path, so it cannot stay empty.
func (u *UDM) servingPLMN(supi string, p identity.PLMN) identity.PLMN {
	if p != (identity.PLMN{}) {
		return p
	}
	u.mu.Lock()
	reg := u.amf3GPP[supi]
	u.mu.Unlock()
	if reg != nil {
		if p := registrationPLMN(reg); p != (identity.PLMN{}) {
			return p
		}
	}
	if imsi, ok := strings.CutPrefix(supi, "imsi-"); ok && len(imsi) >= 5 {
		if p, err := identity.ParsePLMN(imsi[:5]); err == nil {
			return p
		}
	}
	return identity.PLMN{}
}
