package nrfclient

import (
	"crypto/ecdsa"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tern5g/tern/sbi"
)

// TokenVerifier is a producer's check of the access tokens the NRF issues
// (TS 33.501 §13.4.1.2): the producer verifies the signature with the NRF's
// public key, that the token is not expired, that it is the audience (its
// NF type or instance ID), and that the scope names the service called. No
// call to the NRF is needed.
type TokenVerifier struct {
	// Key is the NRF's public key (nrf.NRF.PublicKey). Required.
	Key *ecdsa.PublicKey
	// Issuer is the NRF's NF instance ID; empty accepts any issuer.
	Issuer string
	// NFType and NFInstanceID are the producer's: the token's aud must be
	// one of them. At least one is required.
	NFType       sbi.NFType
	NFInstanceID string
	// Leeway tolerates clock skew between the NRF and the producer.
	Leeway time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Verify checks token (the bearer token of a request, without "Bearer ")
// for a call to service ("nudm-sdm"; empty checks no scope). It returns an
// *sbi.OAuth2Error for the producer's answer (RFC 6750 §3.1): invalid_token
// (401) for a bad signature, a wrong issuer or audience or an expired
// token; insufficient_scope (403) when the scope lacks service.
func (v *TokenVerifier) Verify(token, service string) error {
	if v == nil || v.Key == nil || (v.NFType == "" && v.NFInstanceID == "") {
		return sbi.NewOAuth2Error(http.StatusUnauthorized, sbi.OAuth2InvalidToken, "the verifier has no NRF key or no audience")
	}
	var aud []string
	for _, a := range []string{string(v.NFType), v.NFInstanceID} {
		if a != "" {
			aud = append(aud, a)
		}
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), // never "none" or an HMAC keyed with the public key
		jwt.WithExpirationRequired(),
		jwt.WithAudience(aud...),
		jwt.WithLeeway(v.Leeway),
	}
	if v.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.Issuer))
	}
	if v.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(v.Now))
	}
	var c sbi.AccessTokenClaims
	if _, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return v.Key, nil }, opts...); err != nil {
		return sbi.NewOAuth2Error(http.StatusUnauthorized, sbi.OAuth2InvalidToken, "%v", err)
	}
	if service != "" && !slices.Contains(strings.Fields(c.Scope), service) {
		return sbi.NewOAuth2Error(http.StatusForbidden, sbi.OAuth2InsufficientScope, "scope %q lacks %s", c.Scope, service)
	}
	return nil
}
