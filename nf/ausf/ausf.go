// Package ausf is the authentication server function: Nausf_UEAuthentication
// with 5G-AKA (TS 33.501 §6.1.3.2, TS 29.509).
package ausf

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/kdf"
)

// Config configures the AUSF.
type Config struct {
	// InstanceID is the NF instance ID reported to the UDM; a random UUID
	// when empty.
	InstanceID string `yaml:"instanceId,omitempty"`
	// ServingPLMNs are the PLMNs ("20893") whose serving network names the
	// AUSF accepts (TS 33.501 §6.1.3.2 step 1: the AUSF checks that the SEAF
	// is entitled to use the serving network name).
	ServingPLMNs []string `yaml:"servingPlmns"`
	// ContextTTL is how long an authentication context waits for its
	// confirmation. Default 30s, a little over T3560's five transmissions
	// (TS 24.501 §5.4.1.3.7).
	ContextTTL time.Duration `yaml:"contextTtl,omitempty"`
}

// DefaultContextTTL is used when Config.ContextTTL is zero.
const DefaultContextTTL = 30 * time.Second

// Validate checks the configuration and names the bad field by its path
// in tern's configuration file, as ausf.servingPlmns[0]: tern config reports
// the error as it is.
func (c *Config) Validate() error {
	if len(c.ServingPLMNs) == 0 {
		return errors.New("ausf.servingPlmns: at least one PLMN is required")
	}
	for i, p := range c.ServingPLMNs {
		if _, err := identity.ParsePLMN(p); err != nil {
			return fmt.Errorf("ausf.servingPlmns[%d]: %w", i, err)
		}
	}
	if c.ContextTTL < 0 {
		return fmt.Errorf("ausf.contextTtl: %v is negative", c.ContextTTL)
	}
	return nil
}

// authContext is the state of one 5G-AKA run between Authenticate and
// Confirm5gAka (TS 33.501 §6.1.3.2 step 5: the AUSF stores XRES*, KSEAF),
// and after its confirmation the answer given, until it expires.
type authContext struct {
	supi     string
	snn      string
	xresStar []byte
	kseaf    []byte
	expires  time.Time
	// result is the outcome of the confirmation (resultNone before it)
	// and resStar the RES* it carried, as received: a confirmation
	// repeated with the same RES* gets the same answer (see
	// Confirm5gAka).
	result  uint8
	resStar string
}

// Outcomes of a confirmation (authContext.result, ContextRecord.Result).
const (
	resultNone    uint8 = 0 // not confirmed yet
	resultSuccess uint8 = 1
	resultFailure uint8 = 2
)

// AUSF implements sbi.UEAuthentication.
type AUSF struct {
	cfg  Config
	snns map[string]bool // authorised serving network names
	ttl  time.Duration
	udm  sbi.UDMUEAuthentication
	log  *slog.Logger
	now  func() time.Time

	mu        sync.Mutex
	ctxs      map[string]*authContext // by authCtxID
	nextSweep time.Time
	// rec, when set, gets every change of a context, under mu, before the
	// request that made it is answered (record.go).
	rec Recorder
}

var _ sbi.UEAuthentication = (*AUSF)(nil)

// New returns an AUSF that obtains authentication vectors from udm.
func New(cfg Config, udm sbi.UDMUEAuthentication, logger *slog.Logger) (*AUSF, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if udm == nil {
		return nil, errors.New("ausf: nil UDM")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = identity.NewNFInstanceID()
	}
	a := &AUSF{
		cfg:  cfg,
		snns: make(map[string]bool, len(cfg.ServingPLMNs)),
		ttl:  cfg.ContextTTL,
		udm:  udm,
		log:  logger.With("nf", "ausf"),
		now:  time.Now,
		ctxs: make(map[string]*authContext),
	}
	if a.ttl == 0 {
		a.ttl = DefaultContextTTL
	}
	for _, p := range cfg.ServingPLMNs {
		plmn, _ := identity.ParsePLMN(p) // checked by Validate
		a.snns[kdf.ServingNetworkName(plmn)] = true
	}
	return a, nil
}

// Authenticate implements sbi.UEAuthentication (TS 33.501 §6.1.3.2 steps 1-5).
func (a *AUSF) Authenticate(ctx context.Context, req *models.Ausf_UEAU_AuthenticationInfo) (string, *models.Ausf_UEAU_UEAuthenticationCtx, error) {
	if req == nil || req.SupiOrSuci == "" {
		return "", nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "supiOrSuci")
	}
	if req.ServingNetworkName == "" {
		return "", nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "servingNetworkName")
	}
	snn := req.ServingNetworkName
	if !a.snns[snn] {
		return "", nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseServingNetworkNotAuthorized, "%q", snn)
	}
	res, err := a.udm.GenerateAuthData(ctx, req.SupiOrSuci, &models.Udm_UEAU_AuthenticationInfoRequest{
		ServingNetworkName:    snn,
		ResynchronizationInfo: req.ResynchronizationInfo,
		AusfInstanceId:        a.cfg.InstanceID,
	})
	if err != nil {
		return "", nil, fmt.Errorf("ausf: Nudm_UEAuthentication_Get: %w", err)
	}
	av := res.AuthenticationVector
	if res.AuthType != models.Udm_UEAU_AuthType_5_G_AKA || av == nil || av.AvType != models.Udm_UEAU_AvType_5_G_HE_AKA {
		return "", nil, sbi.NewProblem(http.StatusNotImplemented, sbi.CauseAuthenticationRejected, "UDM chose %q; only 5G-AKA is supported", res.AuthType)
	}
	rnd, err1 := hex.DecodeString(av.Rand)
	xresStar, err2 := hex.DecodeString(av.XresStar)
	kausf, err3 := hex.DecodeString(av.Kausf)
	if err := errors.Join(err1, err2, err3); err != nil || len(rnd) != 16 || len(xresStar) != 16 || len(kausf) != 32 {
		return "", nil, sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseUpstreamServerError, "malformed 5G HE AV from UDM")
	}

	// TS 33.501 §6.1.3.2 step 4-5, Annex A.5 and A.6.
	id, err := newAuthCtxID()
	if err != nil {
		return "", nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "authCtxId: %v", err)
	}
	ac := &authContext{
		supi:     res.Supi,
		snn:      snn,
		xresStar: xresStar,
		kseaf:    kdf.KSEAF(kausf, snn),
	}
	now := a.now()
	ac.expires = now.Add(a.ttl)
	a.mu.Lock()
	a.sweepLocked(now)
	a.ctxs[id] = ac
	a.recordLocked(id, ac)
	a.mu.Unlock()
	a.log.Debug("5G-AKA started", "supi", res.Supi, "authCtxId", id)

	return id, &models.Ausf_UEAU_UEAuthenticationCtx{
		AuthType: models.Ausf_UEAU_AuthType_5_G_AKA,
		Var5gAuthData: models.Ausf_UEAU_Av5gAka{
			Rand:      av.Rand,
			Autn:      av.Autn,
			HxresStar: hex.EncodeToString(kdf.HXRESStar(rnd, xresStar)),
		},
		Links: map[string][]models.Link{
			"5g-aka": {{Href: "/nausf-auth/v1/ue-authentications/" + id + "/5g-aka-confirmation"}},
		},
		ServingNetworkName: snn,
	}, nil
}

// Confirm5gAka implements sbi.UEAuthentication (TS 33.501 §6.1.3.2 steps 9-11).
//
// A context takes one RES*, right or wrong: a confirmation with another
// RES* after it is answered 404 CONTEXT_NOT_FOUND, so that no consumer
// gets a second guess. The same confirmation repeated (the same RES*)
// gets the first answer again until the context expires, without
// reporting to the UDM again: the 5g-aka-confirmation is a PUT (TS 29.509
// §6.1.3.3.3.1), which RFC 9110 §9.2.2 makes idempotent, and an AMF that
// took over from a unit that died after the AUSF answered, before the
// AMF recorded its step, sends the same confirmation again (issue 36).
func (a *AUSF) Confirm5gAka(ctx context.Context, authCtxID string, req *models.Ausf_UEAU_ConfirmationData) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
	if req == nil || req.ResStar == nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "resStar")
	}
	now := a.now()
	a.mu.Lock()
	ac, ok := a.ctxs[authCtxID]
	var result uint8
	if ok {
		result = ac.result
	}
	a.mu.Unlock()
	if !ok || now.After(ac.expires) || (result != resultNone && *req.ResStar != ac.resStar) {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "authCtxId %q", authCtxID)
	}
	if result == resultNone {
		resStar, err := hex.DecodeString(*req.ResStar)
		result = resultFailure
		if err == nil && subtle.ConstantTimeCompare(resStar, ac.xresStar) == 1 {
			result = resultSuccess
		}
		ev := &models.Udm_UEAU_AuthEvent{
			NfInstanceId:       a.cfg.InstanceID,
			Success:            result == resultSuccess,
			TimeStamp:          &now,
			AuthType:           models.Udm_UEAU_AuthType_5_G_AKA,
			ServingNetworkName: ac.snn,
		}
		// TS 33.501 §6.1.4.1a: the result goes to the UDM; a failure to
		// record it does not change the outcome for the UE.
		if err := a.udm.ConfirmAuth(ctx, ac.supi, ev); err != nil {
			a.log.Warn("Nudm_UEAuthentication_ResultConfirmation failed", "supi", ac.supi, "err", err)
		}
		// Recorded after the UDM has the result: a unit that dies before
		// this record leaves the context unconfirmed, and the repeated
		// confirmation reports to the UDM again (which keeps the last
		// result per SUPI: the same).
		a.mu.Lock()
		if cur, ok := a.ctxs[authCtxID]; ok && cur == ac && ac.result == resultNone {
			ac.result, ac.resStar = result, *req.ResStar
			a.recordLocked(authCtxID, ac)
		} else if !ok || cur != ac || ac.resStar != *req.ResStar {
			// Swept, or confirmed meanwhile with another RES*.
			a.mu.Unlock()
			return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "authCtxId %q", authCtxID)
		}
		a.mu.Unlock()
	}
	if result != resultSuccess {
		a.log.Info("5G-AKA failed: RES* does not match XRES*", "supi", ac.supi)
		return &models.Ausf_UEAU_ConfirmationDataResponse{AuthResult: models.Ausf_UEAU_AuthResult_FAILURE}, nil
	}
	a.log.Debug("5G-AKA succeeded", "supi", ac.supi)
	return &models.Ausf_UEAU_ConfirmationDataResponse{
		AuthResult: models.Ausf_UEAU_AuthResult_SUCCESS,
		Supi:       ac.supi,
		Kseaf:      hex.EncodeToString(ac.kseaf),
	}, nil
}

// Pending returns the number of authentication contexts awaiting
// confirmation.
func (a *AUSF) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.ctxs {
		if c.result == resultNone {
			n++
		}
	}
	return n
}

// sweepLocked removes expired contexts, at most every half TTL so that the
// cost stays amortised O(1) per authentication. Caller holds a.mu.
func (a *AUSF) sweepLocked(now time.Time) {
	if now.Before(a.nextSweep) {
		return
	}
	for id, c := range a.ctxs {
		if now.After(c.expires) {
			delete(a.ctxs, id)
			if a.rec != nil {
				a.rec.EndedContext(id)
			}
		}
	}
	a.nextSweep = now.Add(a.ttl / 2)
}

func newAuthCtxID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// InstanceID is the AUSF's NF instance ID.
func (a *AUSF) InstanceID() string { return a.cfg.InstanceID }
