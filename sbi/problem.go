package sbi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/free5gc/openapi/models"
)

// Application error causes (the "cause" attribute of ProblemDetails).
const (
	// TS 29.500 §5.2.7.2, Table 5.2.7.2-1 (protocol and application errors common to all APIs).
	CauseMandatoryIEIncorrect         = "MANDATORY_IE_INCORRECT"
	CauseMandatoryIEMissing           = "MANDATORY_IE_MISSING"
	CauseOptionalIEIncorrect          = "OPTIONAL_IE_INCORRECT"
	CauseSystemFailure                = "SYSTEM_FAILURE"
	CauseResourceURIStructureNotFound = "RESOURCE_URI_STRUCTURE_NOT_FOUND"
	CauseNFCongestion                 = "NF_CONGESTION"
	CauseInsufficientResources        = "INSUFFICIENT_RESOURCES"
	CauseUnspecifiedNFFailure         = "UNSPECIFIED_NF_FAILURE"
	CauseTargetNFNotReachable         = "TARGET_NF_NOT_REACHABLE"
	CauseTimedOutRequest              = "TIMED_OUT_REQUEST"

	// TS 29.500 Table 5.2.7.2-1 as well: a request body that cannot be
	// understood (400; e.g. a JSON Patch that does not apply), and a
	// modification of an IE that may not be modified (403).
	CauseInvalidMsgFormat       = "INVALID_MSG_FORMAT"
	CauseModificationNotAllowed = "MODIFICATION_NOT_ALLOWED"

	// TS 29.503 §6.1.7.3 / §6.2.7.3 / §6.3.7.3 (Nudm).
	CauseUserNotFound                = "USER_NOT_FOUND"
	CauseDataNotFound                = "DATA_NOT_FOUND"
	CauseContextNotFound             = "CONTEXT_NOT_FOUND"
	CauseAuthenticationRejected      = "AUTHENTICATION_REJECTED"
	CauseServingNetworkNotAuthorized = "SERVING_NETWORK_NOT_AUTHORIZED"
	CauseUnknown5GSSubscription      = "UNKNOWN_5GS_SUBSCRIPTION"
	CauseInvalidGUAMI                = "INVALID_GUAMI"
	CauseUnsupportedProtectionScheme = "UNSUPPORTED_PROTECTION_SCHEME" // 501, SUCI scheme without a key

	// TS 29.509 §6.1.7.3 (Nausf_UEAuthentication).
	CauseUpstreamServerError = "UPSTREAM_SERVER_ERROR"

	// TS 29.531 §6.1.7.3 (Nnssf_NSSelection).
	CauseSNSSAINotSupported = "SNSSAI_NOT_SUPPORTED"

	// TS 29.510 (Nnrf); a missing NF instance is a plain 404.
	CauseNFInstanceNotFound = "NF_INSTANCE_NOT_FOUND"
	// TS 29.510 answers an unknown subscription with a plain 404 too; tern
	// names it with the cause other NFs use (TS 29.503 §6.1.7.3).
	CauseSubscriptionNotFound = "SUBSCRIPTION_NOT_FOUND"
)

// ProblemDetails is the error every service operation returns when the peer
// would answer with an HTTP problem (TS 29.500 §5.2.7.2, TS 29.571
// ProblemDetails). Use errors.As to inspect it; CauseOf is a shortcut.
type ProblemDetails struct {
	Status int    // HTTP status code, e.g. 404
	Cause  string // application cause, e.g. CauseUserNotFound
	Detail string // human-readable explanation (never contains key material)
	// InvalidParams names the parameters at fault (TS 29.571
	// InvalidParam): with MANDATORY_IE_MISSING and MANDATORY_IE_INCORRECT
	// the consumer learns which one without parsing Detail.
	InvalidParams []InvalidParam
}

// InvalidParam is one parameter a request got wrong (TS 29.571 §5.2.4.2
// InvalidParam). Param is, as TS 29.571 encodes it, a JSON Pointer into
// the body ("/servingNetworkName"), a path variable in braces ("{ueId}"),
// "query " and a query parameter's name, or "header " and a header's.
type InvalidParam struct {
	Param  string
	Reason string
}

// NewProblem returns a *ProblemDetails; detail is formatted with fmt.Sprintf.
func NewProblem(status int, cause, detail string, args ...any) *ProblemDetails {
	if len(args) > 0 {
		detail = fmt.Sprintf(detail, args...)
	}
	return &ProblemDetails{Status: status, Cause: cause, Detail: detail}
}

// WithInvalidParam returns p naming param (see InvalidParam) as at fault,
// for reason.
func (p *ProblemDetails) WithInvalidParam(param, reason string) *ProblemDetails {
	p.InvalidParams = append(p.InvalidParams, InvalidParam{Param: param, Reason: reason})
	return p
}

// MissingIE is 400 MANDATORY_IE_MISSING for the absent mandatory
// parameters (TS 29.500 §5.2.7.2), each named as InvalidParam.Param.
func MissingIE(params ...string) *ProblemDetails {
	p := NewProblem(http.StatusBadRequest, CauseMandatoryIEMissing, "missing: %s", strings.Join(params, ", "))
	for _, param := range params {
		p.WithInvalidParam(param, "mandatory, absent")
	}
	return p
}

// IncorrectIE is 400 MANDATORY_IE_INCORRECT for a mandatory parameter
// whose value cannot be used (TS 29.500 §5.2.7.2), named as
// InvalidParam.Param; reason is formatted with fmt.Sprintf.
func IncorrectIE(param, reason string, args ...any) *ProblemDetails {
	if len(args) > 0 {
		reason = fmt.Sprintf(reason, args...)
	}
	return NewProblem(http.StatusBadRequest, CauseMandatoryIEIncorrect, "%s: %s", param, reason).WithInvalidParam(param, reason)
}

// Error implements error.
func (p *ProblemDetails) Error() string {
	if p.Detail == "" {
		return fmt.Sprintf("%d %s", p.Status, p.Cause)
	}
	return fmt.Sprintf("%d %s: %s", p.Status, p.Cause, p.Detail)
}

// Is reports whether target is a *ProblemDetails with the same Cause (and the
// same Status when target sets one), so errors.Is(err, ErrUserNotFound) works.
func (p *ProblemDetails) Is(target error) bool {
	t, ok := target.(*ProblemDetails)
	if !ok {
		return false
	}
	return t.Cause == p.Cause && (t.Status == 0 || t.Status == p.Status)
}

// Model converts the error to the OpenAPI model carried by the HTTP binding.
func (p *ProblemDetails) Model() *models.ProblemDetails {
	m := &models.ProblemDetails{
		Title:  http.StatusText(p.Status),
		Status: int32(p.Status),
		Detail: p.Detail,
		Cause:  p.Cause,
	}
	for _, ip := range p.InvalidParams {
		m.InvalidParams = append(m.InvalidParams, models.InvalidParam{Param: ip.Param, Reason: ip.Reason})
	}
	return m
}

// ProblemFromModel converts a received OpenAPI ProblemDetails back into the error.
func ProblemFromModel(m *models.ProblemDetails) *ProblemDetails {
	if m == nil {
		return nil
	}
	p := &ProblemDetails{Status: int(m.Status), Cause: m.Cause, Detail: m.Detail}
	for _, ip := range m.InvalidParams {
		p.InvalidParams = append(p.InvalidParams, InvalidParam{Param: ip.Param, Reason: ip.Reason})
	}
	return p
}

// CauseOf returns the cause of the first *ProblemDetails in err's chain, or "".
func CauseOf(err error) string {
	var p *ProblemDetails
	if errors.As(err, &p) {
		return p.Cause
	}
	return ""
}

// StatusOf returns the HTTP status of the first *ProblemDetails or
// *OAuth2Error in err's chain, 500 for any other non-nil error, and 200 for
// nil.
func StatusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var p *ProblemDetails
	if errors.As(err, &p) {
		return p.Status
	}
	var o *OAuth2Error
	if errors.As(err, &o) {
		return o.Status
	}
	return http.StatusInternalServerError
}

// Sentinel problems for errors.Is comparisons (matched by Cause and Status).
var (
	ErrUserNotFound                = &ProblemDetails{Status: http.StatusNotFound, Cause: CauseUserNotFound}
	ErrDataNotFound                = &ProblemDetails{Status: http.StatusNotFound, Cause: CauseDataNotFound}
	ErrContextNotFound             = &ProblemDetails{Status: http.StatusNotFound, Cause: CauseContextNotFound}
	ErrAuthenticationRejected      = &ProblemDetails{Status: http.StatusForbidden, Cause: CauseAuthenticationRejected}
	ErrServingNetworkNotAuthorized = &ProblemDetails{Status: http.StatusForbidden, Cause: CauseServingNetworkNotAuthorized}
	ErrMandatoryIEIncorrect        = &ProblemDetails{Status: http.StatusBadRequest, Cause: CauseMandatoryIEIncorrect}
	ErrMandatoryIEMissing          = &ProblemDetails{Status: http.StatusBadRequest, Cause: CauseMandatoryIEMissing}
	ErrSNSSAINotSupported          = &ProblemDetails{Status: http.StatusForbidden, Cause: CauseSNSSAINotSupported}
	ErrNFInstanceNotFound          = &ProblemDetails{Status: http.StatusNotFound, Cause: CauseNFInstanceNotFound}
	ErrSubscriptionNotFound        = &ProblemDetails{Status: http.StatusNotFound, Cause: CauseSubscriptionNotFound}
)
