package nrf

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/free5gc/openapi/models"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tern5g/tern/sbi"
)

// grantType is the only OAuth 2.0 grant of Nnrf_AccessToken (TS 29.510
// §5.4.2.2; RFC 6749 §4.4).
const grantType = "client_credentials"

// loadKey sets the token signing key: WithSigningKey's, Config.SigningKey's,
// or a new one when access tokens are on.
func (n *NRF) loadKey() error {
	if n.key == nil && n.cfg.SigningKey != "" {
		k, err := readECKey(n.cfg.SigningKey)
		if err != nil {
			return fmt.Errorf("nrf: signingKey %s: %w", n.cfg.SigningKey, err)
		}
		n.key = k
	}
	if n.key == nil && n.cfg.AccessTokens {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("nrf: generating the token signing key: %w", err)
		}
		n.key = k
		n.log.Info("generated an access token signing key: tokens will not survive a restart (set nrf.signingKey to keep them)")
	}
	if n.key != nil && n.key.Curve != elliptic.P256() {
		return fmt.Errorf("nrf: token signing key: curve %s, ES256 needs P-256", n.key.Curve.Params().Name)
	}
	return nil
}

// readECKey reads a PEM private key, PKCS #8 or SEC 1.
func readECKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("neither a SEC 1 nor a PKCS #8 private key: %w", err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, want an ECDSA P-256 key", k)
	}
	return ec, nil
}

// PublicKey is the key that verifies the NRF's access tokens (producers
// configure nrfclient.TokenVerifier with it), or nil when the NRF issues
// none.
func (n *NRF) PublicKey() *ecdsa.PublicKey {
	if n.key == nil || !n.cfg.AccessTokens {
		return nil
	}
	return &n.key.PublicKey
}

// AccessToken implements sbi.AccessTokenService (Nnrf_AccessToken Get,
// TS 29.510 §5.4.2.2; TS 33.501 §13.4.1.1.2). The NRF checks that the
// requester is a registered instance (of the nfType it claims), that the
// target, an instance or an NF type, is registered, and that for every
// service in the scope some target instance offers it to the requester's NF
// type (allowedNfTypes of the profile and of the service). Then it issues a
// token with iss = the NRF's instance ID, sub = the requester, aud = the
// target instance ID or NF type, scope = the services, exp = now +
// Config.TokenLifetime.
func (n *NRF) AccessToken(ctx context.Context, req *models.Nrf_AccTok_AccessTokenReq) (*models.Nrf_AccTok_AccessTokenRsp, error) {
	bad := func(code, format string, args ...any) error {
		// RFC 6749 §5.2: 400 unless the client authenticated with an
		// Authorization header, which NFs do not.
		return sbi.NewOAuth2Error(http.StatusBadRequest, code, format, args...)
	}
	if !n.cfg.AccessTokens || n.key == nil {
		return nil, bad(sbi.OAuth2UnauthorizedClient, "this NRF issues no access tokens (nrf.accessTokens is off)")
	}
	if req == nil {
		return nil, bad(sbi.OAuth2InvalidRequest, "no request")
	}
	if req.Grant_type != grantType {
		return nil, bad(sbi.OAuth2UnsupportedGrantType, "grant_type %q, want %s", req.Grant_type, grantType)
	}
	if req.NfInstanceId == "" {
		return nil, bad(sbi.OAuth2InvalidRequest, "nfInstanceId missing")
	}
	scope := strings.Fields(req.Scope)
	if len(scope) == 0 {
		return nil, bad(sbi.OAuth2InvalidRequest, "scope missing")
	}
	if req.TargetNfType == "" && req.TargetNfInstanceId == "" {
		return nil, bad(sbi.OAuth2InvalidRequest, "targetNfType or targetNfInstanceId missing")
	}

	s := n.snap.Load()
	requester, ok := s.byID[req.NfInstanceId]
	if !ok {
		return nil, bad(sbi.OAuth2InvalidClient, "NF instance %q is not registered", req.NfInstanceId)
	}
	if req.NfType != "" && req.NfType != requester.mgmt.NfType {
		return nil, bad(sbi.OAuth2InvalidClient, "NF instance %q is registered as %s, not %s", req.NfInstanceId, requester.mgmt.NfType, req.NfType)
	}
	reqType := requester.mgmt.NfType
	registered := func(e *entry) bool { return e.mgmt.NfStatus == models.Nrf_NFMgmt_NFStatus_REGISTERED }

	var targets []*entry
	var aud string
	if id := req.TargetNfInstanceId; id != "" {
		t, ok := s.byID[id]
		if !ok || !registered(t) {
			return nil, bad(sbi.OAuth2InvalidScope, "target NF instance %q is not registered", id)
		}
		if req.TargetNfType != "" && t.mgmt.NfType != req.TargetNfType {
			return nil, bad(sbi.OAuth2InvalidScope, "target NF instance %q is a %s, not a %s", id, t.mgmt.NfType, req.TargetNfType)
		}
		targets, aud = []*entry{t}, id
	} else {
		for _, e := range s.byType[req.TargetNfType] {
			if registered(e) {
				targets = append(targets, e)
			}
		}
		if len(targets) == 0 {
			return nil, bad(sbi.OAuth2InvalidScope, "no %s is registered", req.TargetNfType)
		}
		aud = string(req.TargetNfType)
	}
	for _, svc := range scope {
		name := models.Nrf_NFMgmt_ServiceName(svc)
		if !slices.ContainsFunc(targets, func(t *entry) bool { return grants(&t.mgmt, name, reqType) }) {
			return nil, bad(sbi.OAuth2InvalidScope, "no target %s offers %s to a %s", aud, svc, reqType)
		}
	}

	now := n.now()
	claims := sbi.AccessTokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    n.id,
			Subject:   req.NfInstanceId,
			Audience:  jwt.ClaimStrings{aud},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(n.cfg.TokenLifetime)),
		},
		Scope: strings.Join(scope, " "),
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(n.key)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "signing the access token: %v", err)
	}
	n.log.Debug("access token issued", "sub", req.NfInstanceId, "aud", aud, "scope", claims.Scope)
	return &models.Nrf_AccTok_AccessTokenRsp{
		Access_token: tok,
		Token_type:   "Bearer",
		Expires_in:   int32(n.cfg.TokenLifetime / time.Second),
		Scope:        claims.Scope,
	}, nil
}

// grants reports whether p offers service to NF type t: the profile and
// the service both allow t (an empty allowedNfTypes allows every type,
// TS 29.510 §6.1.6.2, NFProfile and NFService).
func grants(p *models.Nrf_NFMgmt_NFProfile, service models.Nrf_NFMgmt_ServiceName, t sbi.NFType) bool {
	allowed := func(list []models.Nrf_NFMgmt_NFType) bool { return len(list) == 0 || slices.Contains(list, t) }
	if !allowed(p.AllowedNfTypes) {
		return false
	}
	for _, s := range p.NfServices {
		if s.ServiceName == service && allowed(s.AllowedNfTypes) {
			return true
		}
	}
	for _, s := range p.NfServiceList {
		if s.ServiceName == service && allowed(s.AllowedNfTypes) {
			return true
		}
	}
	return false
}

// VerificationKey reads the key that verifies the NRF's tokens from a PEM
// file: the NRF's signing key itself (its public half is used) or just its
// public key (a PKIX "PUBLIC KEY" block), which is what the hosts of the
// other NFs need.
func VerificationKey(path string) (*ecdsa.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nrf: token key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk != nil && blk.Type == "PUBLIC KEY" {
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("nrf: token key %s: %w", path, err)
		}
		ec, ok := k.(*ecdsa.PublicKey)
		if !ok || ec.Curve != elliptic.P256() {
			return nil, fmt.Errorf("nrf: token key %s: want an ECDSA P-256 public key", path)
		}
		return ec, nil
	}
	k, err := readECKey(path)
	if err != nil {
		return nil, fmt.Errorf("nrf: token key %s: %w", path, err)
	}
	if k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("nrf: token key %s: want a P-256 key", path)
	}
	return &k.PublicKey, nil
}
