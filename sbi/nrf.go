package sbi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/free5gc/openapi/models"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tern5g/tern/identity"
)

// This file holds the NRF's services (TS 29.510): Nnrf_NFManagement,
// Nnrf_NFDiscovery and Nnrf_AccessToken, and the NF status notification
// that subscribers serve.

// NFManagement is Nnrf_NFManagement (TS 29.510 §5.2), served by the NRF and
// consumed by every NF (nrfclient.Agent drives it).
type NFManagement interface {
	// Register is NFRegister (TS 29.510 §5.2.2.2): PUT
	// /nf-instances/{profile.NfInstanceId}. It stores profile, replacing any
	// profile of the same instance, and returns the profile as stored: the
	// NRF sets heartBeatTimer to the interval at which it wants heartbeats
	// (TS 29.510 §5.2.2.2.2) and nfStatus to REGISTERED when it is empty.
	// created is true when the instance was not registered (HTTP 201
	// Created), false when its profile was replaced (200 OK).
	// Errors: CauseMandatoryIEMissing, CauseMandatoryIEIncorrect.
	Register(ctx context.Context, profile *models.Nrf_NFMgmt_NFProfile) (stored *models.Nrf_NFMgmt_NFProfile, created bool, err error)

	// Update is NFUpdate (TS 29.510 §5.2.2.3): PATCH
	// /nf-instances/{nfInstanceID} with application/json-patch+json, the
	// JSON Patch (RFC 6902) patch applied to the stored profile as a whole
	// or not at all. The NF heart-beat (§5.2.2.3.2) is the Update of
	// HeartbeatPatch: it tells the NRF that the instance is alive, as every
	// Update does. A nil profile means 204 No Content (the NRF accepted the
	// patch and the profile is unchanged, as after a heart-beat); a non-nil
	// one is the whole profile as stored, answered 200 OK, after a change
	// or when the NRF stored something else than asked (for instance it
	// reinstates an instance it had suspended for missed heartbeats). A
	// complete replacement is a Register (PUT, §5.2.2.3.1).
	// Errors: CauseNFInstanceNotFound (404: the NRF forgot the instance,
	// e.g. it restarted or the instance missed heartbeats for too long; the
	// NF registers again); CauseInvalidMsgFormat (400: the patch does not
	// apply), CauseMandatoryIEMissing, CauseMandatoryIEIncorrect (400: the
	// patched profile is not valid), CauseModificationNotAllowed (403: the
	// patch changes nfInstanceId).
	Update(ctx context.Context, nfInstanceID string, patch []models.PatchItem) (*models.Nrf_NFMgmt_NFProfile, error)

	// Deregister is NFDeregister (TS 29.510 §5.2.2.4): DELETE
	// /nf-instances/{nfInstanceID}, 204. Errors: CauseNFInstanceNotFound.
	Deregister(ctx context.Context, nfInstanceID string) error

	// GetProfile is NFProfileRetrieval (TS 29.510 §5.2.2.9): GET
	// /nf-instances/{nfInstanceID}, 200. The profile is returned whatever
	// its nfStatus. Errors: CauseNFInstanceNotFound.
	GetProfile(ctx context.Context, nfInstanceID string) (*models.Nrf_NFMgmt_NFProfile, error)

	// Subscribe is NFStatusSubscribe (TS 29.510 §5.2.2.5): POST
	// /subscriptions, 201. The NRF assigns subscriptionId and validityTime
	// (at most the requested one) and then calls
	// NFStatusNotifier.NFStatusNotify at sub.NfStatusNotificationUri for
	// every event of sub.ReqNotifEvents (all three when empty) on an NF
	// instance that satisfies sub.SubscrCond (nfInstanceId, nfType and
	// serviceName are supported; no condition means every instance).
	// Errors: CauseMandatoryIEMissing (no nfStatusNotificationUri),
	// CauseOptionalIEIncorrect (validityTime in the past, an unsupported
	// condition or event).
	Subscribe(ctx context.Context, sub *models.Nrf_NFMgmt_SubscriptionData) (*models.Nrf_NFMgmt_SubscriptionData, error)

	// Unsubscribe is NFStatusUnSubscribe (TS 29.510 §5.2.2.7): DELETE
	// /subscriptions/{subscriptionID}, 204. Errors: CauseSubscriptionNotFound
	// (unknown or expired subscription).
	Unsubscribe(ctx context.Context, subscriptionID string) error
}

// HeartbeatPatch is the body of the NF heart-beat (TS 29.510 §5.2.2.3.2):
// a replace of nfStatus by the status the NF registered with (REGISTERED
// unless it asked to be, say, UNDISCOVERABLE).
func HeartbeatPatch(status models.Nrf_NFMgmt_NFStatus) []models.PatchItem {
	if status == "" {
		status = models.Nrf_NFMgmt_NFStatus_REGISTERED
	}
	return []models.PatchItem{{Op: models.PatchOperation_REPLACE, Path: "/nfStatus", Value: string(status)}}
}

// NFStatusNotifier receives NFStatusNotify (TS 29.510 §5.2.2.6, §6.1.5.2):
// the NRF POSTs n to uri, the nfStatusNotificationUri of a subscription.
// Served by subscribers (nrfclient.Discoverer is one), consumed by the NRF.
// The in-process binding routes on uri; the HTTP binding POSTs to it and
// expects 204. n.Event is NF_REGISTERED or NF_PROFILE_CHANGED with
// n.NfProfile (the whole profile), or NF_DEREGISTERED with only
// n.NfInstanceUri. n is shared between subscribers: treat it as read-only.
type NFStatusNotifier interface {
	NFStatusNotify(ctx context.Context, uri string, n *models.Nrf_NFMgmt_NotificationData) error
}

// DiscoveryQuery holds the query parameters of Nnrf_NFDiscovery (TS 29.510
// §6.2.3.2.3.1) that tern uses. Zero fields do not filter. A profile that
// does not say what it serves (no sNssais, no smfInfo, no supiRanges ...)
// places no restriction and matches (TS 29.510 §6.1.6.2.2: absent means
// "any").
type DiscoveryQuery struct {
	RequesterNFType    NFType                          // requester-nf-type: checked against allowedNfTypes
	ServiceNames       []models.Nrf_NFMgmt_ServiceName // service-names: any of them
	SNSSAIs            []identity.SNSSAI               // snssais: any of them, in sNssais and smfInfo
	PLMN               *identity.PLMN                  // target-plmn-list (one)
	DNN                string                          // dnn: smfInfo sNssaiSmfInfoList[].dnnSmfInfoList[].dnn
	SUPI               string                          // supi: udmInfo/ausfInfo/udrInfo/pcfInfo supiRanges
	TAI                *identity.TAI                   // tai: smfInfo/amfInfo taiList, taiRangeList
	TargetNFInstanceID string                          // target-nf-instance-id
}

// NFDiscovery is Nnrf_NFDiscovery (TS 29.510 §5.3), served by the NRF and
// consumed through nrfclient.Discoverer, which caches.
type NFDiscovery interface {
	// Discover is NFDiscover (TS 29.510 §5.3.2.2): GET
	// /nf-instances?target-nf-type=...: the REGISTERED instances of target
	// that match q, and how long the result may be cached
	// (validityPeriod, seconds). An empty result is not an error.
	// Errors: CauseMandatoryIEMissing (no target).
	Discover(ctx context.Context, target NFType, q DiscoveryQuery) (*models.Nrf_NFDisc_SearchResult, error)
}

// AccessTokenService is Nnrf_AccessToken (TS 29.510 §5.4; TS 33.501
// §13.4.1): OAuth 2.0 client credentials grant (RFC 6749 §4.4), served by
// the NRF. On the HTTP binding it is POST /oauth2/token with an
// application/x-www-form-urlencoded AccessTokenReq (TS 29.510 §6.3.3).
type AccessTokenService interface {
	// AccessToken issues a token for req.NfInstanceId to call the services
	// named in req.Scope (space-separated service names) of
	// req.TargetNfInstanceId or, without it, of any instance of
	// req.TargetNfType. The token is a JWS (ES256) whose claims are
	// AccessTokenClaims. Errors are *OAuth2Error (AccessTokenErr, 400):
	// OAuth2InvalidRequest, OAuth2InvalidClient (requester not registered),
	// OAuth2InvalidScope (target or service unknown, or not allowed to the
	// requester), OAuth2UnsupportedGrantType, OAuth2UnauthorizedClient (the
	// NRF does not issue tokens).
	AccessToken(ctx context.Context, req *models.Nrf_AccTok_AccessTokenReq) (*models.Nrf_AccTok_AccessTokenRsp, error)
}

// AccessTokenClaims are the claims of an Nnrf_AccessToken token (TS 29.510
// §6.3.5.2 AccessTokenClaims, TS 33.501 §13.4.1.1): iss is the NRF's
// NF instance ID, sub the consumer's, aud the producer's NF type or NF
// instance ID, scope the service names, exp the expiry.
//
// models.Nrf_AccTok_AccessTokenClaims is not used because it declares iss,
// sub, aud and exp both itself and through its embedded
// jwt.RegisteredClaims: encoding/json fills the outer fields, so the jwt
// validator, which reads the embedded ones, would never see an expiry.
type AccessTokenClaims struct {
	jwt.RegisteredClaims
	Scope string `json:"scope"`
}

// OAuth 2.0 error codes: RFC 6749 §5.2 for the NRF's AccessTokenErr, RFC
// 6750 §3.1 for a producer rejecting a bearer token.
const (
	OAuth2InvalidRequest       = "invalid_request"
	OAuth2InvalidClient        = "invalid_client"
	OAuth2InvalidGrant         = "invalid_grant"
	OAuth2UnauthorizedClient   = "unauthorized_client"
	OAuth2UnsupportedGrantType = "unsupported_grant_type"
	OAuth2InvalidScope         = "invalid_scope"
	OAuth2InvalidToken         = "invalid_token"      // RFC 6750: 401
	OAuth2InsufficientScope    = "insufficient_scope" // RFC 6750: 403
)

// OAuth2Error is an OAuth 2.0 error: the NRF's AccessTokenErr answer (TS
// 29.510 §6.3.5.2, HTTP 400) or a producer's bearer token rejection (RFC
// 6750 §3: 401 with WWW-Authenticate: Bearer error="invalid_token", or 403
// insufficient_scope). It is not a ProblemDetails because the wire format
// is not one. Compare with errors.Is against the Err* sentinels (matched
// by Code).
type OAuth2Error struct {
	Status      int    // HTTP status
	Code        string // OAuth2* constant
	Description string // error_description, human-readable
}

// Error implements error.
func (e *OAuth2Error) Error() string {
	if e.Description == "" {
		return fmt.Sprintf("%d %s", e.Status, e.Code)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Description)
}

// Is reports whether target is an *OAuth2Error with the same Code.
func (e *OAuth2Error) Is(target error) bool {
	t, ok := target.(*OAuth2Error)
	return ok && t.Code == e.Code
}

// Model converts the error to the AccessTokenErr body.
func (e *OAuth2Error) Model() *models.Nrf_AccTok_AccessTokenErr {
	return &models.Nrf_AccTok_AccessTokenErr{Error: e.Code, Error_description: e.Description}
}

// OAuth2ErrorFromModel converts a received AccessTokenErr and its HTTP
// status back into the error.
func OAuth2ErrorFromModel(status int, m *models.Nrf_AccTok_AccessTokenErr) *OAuth2Error {
	if m == nil {
		return nil
	}
	return &OAuth2Error{Status: status, Code: m.Error, Description: m.Error_description}
}

// NewOAuth2Error returns an *OAuth2Error; description is formatted with
// fmt.Sprintf.
func NewOAuth2Error(status int, code, description string, args ...any) *OAuth2Error {
	if len(args) > 0 {
		description = fmt.Sprintf(description, args...)
	}
	return &OAuth2Error{Status: status, Code: code, Description: description}
}

// Sentinel OAuth 2.0 errors for errors.Is (matched by Code).
var (
	ErrInvalidClient     = &OAuth2Error{Status: http.StatusBadRequest, Code: OAuth2InvalidClient}
	ErrInvalidScope      = &OAuth2Error{Status: http.StatusBadRequest, Code: OAuth2InvalidScope}
	ErrInvalidToken      = &OAuth2Error{Status: http.StatusUnauthorized, Code: OAuth2InvalidToken}
	ErrInsufficientScope = &OAuth2Error{Status: http.StatusForbidden, Code: OAuth2InsufficientScope}
)
