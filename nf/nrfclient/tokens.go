package nrfclient

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// TokenSource gets OAuth2 access tokens from the NRF (TS 33.501 §13.4.1.1,
// the client credentials grant of Nnrf_AccessToken) for the calls of one
// consumer, one per target service, and keeps each until shortly before it
// expires.
type TokenSource struct {
	nrf     sbi.AccessTokenService
	id      string // the consumer's NF instance ID (sub)
	nfType  sbi.NFType
	margin  time.Duration
	now     func() time.Time
	mu      sync.Mutex
	byScope map[string]cachedToken
}

type cachedToken struct {
	token   string
	expires time.Time
}

// NewTokenSource asks nrf for tokens on behalf of the consumer instance id
// of type t (registered with that NRF).
func NewTokenSource(nrf sbi.AccessTokenService, id string, t sbi.NFType) *TokenSource {
	return &TokenSource{nrf: nrf, id: id, nfType: t, margin: 30 * time.Second, now: time.Now, byScope: map[string]cachedToken{}}
}

// Token returns a token whose scope covers service ("nudm-sdm"), for any
// producer of the service's NF type.
func (s *TokenSource) Token(ctx context.Context, service string) (string, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.byScope[service]
	s.mu.Unlock()
	if ok && now.Add(s.margin).Before(c.expires) {
		return c.token, nil
	}
	target := sbi.NFTypeOfService(service)
	if target == "" {
		return "", fmt.Errorf("nrfclient: token for %q: unknown service", service)
	}
	rsp, err := s.nrf.AccessToken(ctx, &models.Nrf_AccTok_AccessTokenReq{
		Grant_type: "client_credentials", NfInstanceId: s.id, NfType: s.nfType,
		TargetNfType: target, Scope: service,
	})
	if err != nil {
		return "", fmt.Errorf("nrfclient: token for %s: %w", service, err)
	}
	if rsp == nil || rsp.Access_token == "" || !strings.EqualFold(rsp.Token_type, "Bearer") {
		return "", fmt.Errorf("nrfclient: token for %s: no bearer token in the answer", service)
	}
	c = cachedToken{token: rsp.Access_token, expires: now.Add(time.Duration(rsp.Expires_in) * time.Second)}
	s.mu.Lock()
	s.byScope[service] = c
	s.mu.Unlock()
	return c.token, nil
}

// Forget drops the token of service (the producer refused it).
func (s *TokenSource) Forget(service string) {
	s.mu.Lock()
	delete(s.byScope, service)
	s.mu.Unlock()
}
