package nrf

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tern5g/tern/nf/nrfclient"
	"github.com/tern5g/tern/sbi"
)

// tokenNRF has an AMF and an AUSF as consumers and a UDM that offers
// nudm-sdm to AMFs and SMFs and nudm-ueau to AUSFs only.
func tokenNRF(t *testing.T) (*NRF, *fakeClock) {
	t.Helper()
	n, clk := newNRF(t, Config{AccessTokens: true, InstanceID: "nrf-1", TokenLifetime: time.Hour})
	mustRegister(t, n, profile("amf-1", sbi.NFTypeAMF, models.Nrf_NFMgmt_ServiceName_NAMF_COMM))
	mustRegister(t, n, profile("ausf-1", sbi.NFTypeAUSF, models.Nrf_NFMgmt_ServiceName_NAUSF_AUTH))
	udm := profile("udm-1", sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM, models.Nrf_NFMgmt_ServiceName_NUDM_UEAU)
	udm.NfServices[0].AllowedNfTypes = []sbi.NFType{sbi.NFTypeAMF, sbi.NFTypeSMF}
	udm.NfServices[1].AllowedNfTypes = []sbi.NFType{sbi.NFTypeAUSF}
	mustRegister(t, n, udm)
	return n, clk
}

func tokenReq(requester string, target sbi.NFType, scope string) *models.Nrf_AccTok_AccessTokenReq {
	return &models.Nrf_AccTok_AccessTokenReq{Grant_type: "client_credentials", NfInstanceId: requester, TargetNfType: target, Scope: scope}
}

func TestAccessTokenIssueAndVerify(t *testing.T) {
	ctx := context.Background()
	n, clk := tokenNRF(t)
	rsp, err := n.AccessToken(ctx, tokenReq("amf-1", sbi.NFTypeUDM, "nudm-sdm"))
	if err != nil {
		t.Fatal(err)
	}
	if rsp.Token_type != "Bearer" || rsp.Expires_in != 3600 || rsp.Scope != "nudm-sdm" {
		t.Fatalf("response %+v", rsp)
	}
	// The claims TS 29.510 / TS 33.501 name.
	var c sbi.AccessTokenClaims
	if _, err := jwt.ParseWithClaims(rsp.Access_token, &c, func(*jwt.Token) (any, error) { return n.PublicKey(), nil },
		jwt.WithTimeFunc(clk.Now), jwt.WithValidMethods([]string{"ES256"})); err != nil {
		t.Fatal(err)
	}
	if c.Issuer != "nrf-1" || c.Subject != "amf-1" || len(c.Audience) != 1 || c.Audience[0] != "UDM" || c.Scope != "nudm-sdm" ||
		!c.ExpiresAt.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("claims %+v", c)
	}

	udm := nrfclient.TokenVerifier{Key: n.PublicKey(), Issuer: n.InstanceID(), NFType: sbi.NFTypeUDM, NFInstanceID: "udm-1", Now: clk.Now}
	if err := udm.Verify(rsp.Access_token, "nudm-sdm"); err != nil {
		t.Fatalf("good token: %v", err)
	}
	if err := udm.Verify(rsp.Access_token, "nudm-uecm"); !errors.Is(err, sbi.ErrInsufficientScope) || sbi.StatusOf(err) != 403 {
		t.Fatalf("other service: %v", err)
	}
	smf := nrfclient.TokenVerifier{Key: n.PublicKey(), Issuer: n.InstanceID(), NFType: sbi.NFTypeSMF, Now: clk.Now}
	if err := smf.Verify(rsp.Access_token, "nudm-sdm"); !errors.Is(err, sbi.ErrInvalidToken) || sbi.StatusOf(err) != 401 {
		t.Fatalf("wrong audience: %v", err)
	}
	other := udm
	other.Issuer = "another-nrf"
	if err := other.Verify(rsp.Access_token, "nudm-sdm"); !errors.Is(err, sbi.ErrInvalidToken) {
		t.Fatalf("wrong issuer: %v", err)
	}
	forged, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other = udm
	other.Key = &forged.PublicKey
	if err := other.Verify(rsp.Access_token, "nudm-sdm"); !errors.Is(err, sbi.ErrInvalidToken) {
		t.Fatalf("other key: %v", err)
	}
	if err := udm.Verify(rsp.Access_token+"x", "nudm-sdm"); !errors.Is(err, sbi.ErrInvalidToken) {
		t.Fatalf("tampered token: %v", err)
	}
	if err := udm.Verify("not a token", ""); !errors.Is(err, sbi.ErrInvalidToken) {
		t.Fatalf("garbage: %v", err)
	}
	clk.Advance(time.Hour + time.Second)
	if err := udm.Verify(rsp.Access_token, "nudm-sdm"); !errors.Is(err, sbi.ErrInvalidToken) {
		t.Fatalf("expired token: %v", err)
	}

	// A token for one instance names it as the audience.
	req := tokenReq("amf-1", "", "nudm-sdm")
	req.TargetNfInstanceId = "udm-1"
	rsp, err = n.AccessToken(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	byID := nrfclient.TokenVerifier{Key: n.PublicKey(), NFInstanceID: "udm-1", Now: clk.Now}
	if err := byID.Verify(rsp.Access_token, "nudm-sdm"); err != nil {
		t.Fatalf("instance token: %v", err)
	}
	udm.Now = clk.Now
	udm.NFInstanceID = ""
	if err := udm.Verify(rsp.Access_token, "nudm-sdm"); !errors.Is(err, sbi.ErrInvalidToken) {
		t.Fatalf("an instance token accepted by the type: %v", err)
	}
}

func TestAccessTokenRefusals(t *testing.T) {
	ctx := context.Background()
	n, _ := tokenNRF(t)
	withType := tokenReq("amf-1", sbi.NFTypeUDM, "nudm-sdm")
	withType.NfType = sbi.NFTypeSMF
	badGrant := tokenReq("amf-1", sbi.NFTypeUDM, "nudm-sdm")
	badGrant.Grant_type = "password"
	unknownTarget := tokenReq("amf-1", "", "nudm-sdm")
	unknownTarget.TargetNfInstanceId = "udm-9"
	for name, c := range map[string]struct {
		req  *models.Nrf_AccTok_AccessTokenReq
		code string
	}{
		"unknown requester":       {tokenReq("amf-9", sbi.NFTypeUDM, "nudm-sdm"), sbi.OAuth2InvalidClient},
		"requester claims a type": {withType, sbi.OAuth2InvalidClient},
		"service not allowed":     {tokenReq("amf-1", sbi.NFTypeUDM, "nudm-ueau"), sbi.OAuth2InvalidScope},
		"one service not allowed": {tokenReq("amf-1", sbi.NFTypeUDM, "nudm-sdm nudm-ueau"), sbi.OAuth2InvalidScope},
		"service not offered":     {tokenReq("amf-1", sbi.NFTypeUDM, "nudm-uecm"), sbi.OAuth2InvalidScope},
		"no such target type":     {tokenReq("amf-1", sbi.NFTypePCF, "npcf-smpolicycontrol"), sbi.OAuth2InvalidScope},
		"no such target instance": {unknownTarget, sbi.OAuth2InvalidScope},
		"no scope":                {tokenReq("amf-1", sbi.NFTypeUDM, " "), sbi.OAuth2InvalidRequest},
		"no target":               {tokenReq("amf-1", "", "nudm-sdm"), sbi.OAuth2InvalidRequest},
		"grant type":              {badGrant, sbi.OAuth2UnsupportedGrantType},
		"nil":                     {nil, sbi.OAuth2InvalidRequest},
	} {
		_, err := n.AccessToken(ctx, c.req)
		var oe *sbi.OAuth2Error
		if !errors.As(err, &oe) || oe.Code != c.code || oe.Status != 400 || oe.Model().Error != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	// The AUSF may have nudm-ueau.
	if _, err := n.AccessToken(ctx, tokenReq("ausf-1", sbi.NFTypeUDM, "nudm-ueau")); err != nil {
		t.Fatal(err)
	}
}

func TestAccessTokensOff(t *testing.T) {
	n, _ := newNRF(t, Config{})
	mustRegister(t, n, profile("amf-1", sbi.NFTypeAMF))
	_, err := n.AccessToken(context.Background(), tokenReq("amf-1", sbi.NFTypeAMF, "namf-comm"))
	var oe *sbi.OAuth2Error
	if !errors.As(err, &oe) || oe.Code != sbi.OAuth2UnauthorizedClient {
		t.Fatalf("tokens off: %v", err)
	}
	if n.PublicKey() != nil {
		t.Fatal("a public key without tokens")
	}
}

func TestSigningKeyFromFile(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	path := filepath.Join(t.TempDir(), "nrf.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ := newNRF(t, Config{AccessTokens: true, SigningKey: path})
	if !n.PublicKey().Equal(&k.PublicKey) {
		t.Fatal("the key of signingKey is not used")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := New(Config{AccessTokens: true}, nil, WithSigningKey(p384)); err == nil {
		t.Fatal("a P-384 key accepted for ES256")
	}
	if _, err := New(Config{AccessTokens: true, SigningKey: filepath.Join(t.TempDir(), "none.pem")}, nil); err == nil {
		t.Fatal("a missing key file accepted")
	}
}
