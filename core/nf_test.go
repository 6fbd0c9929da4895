package core

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/internal/poll"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/nrfclient"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
)

// With nrf.accessTokens, NFs run on their own (here in this process) call
// each other with the NRF's OAuth2 tokens (TS 33.501 §13.4.1): a call
// without a token, or with one for another NF type, is refused; an
// authentication through AUSF, UDM and UDR, each with its own token,
// succeeds.
func TestNFsWithAccessTokens(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyPath := filepath.Join(t.TempDir(), "nrf.pem")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(t.TempDir(), "subscribers.db")
	cfg.Store.DemoSubscribers = 1
	cfg.NRF.AccessTokens, cfg.NRF.SigningKey = true, keyPath
	for _, name := range config.NFNames {
		port, err := freeport.TCP()
		if err != nil {
			t.Fatal(err)
		}
		cfg.SBI.Listen[name] = fmt.Sprintf("127.0.0.1:%d", port)
	}
	ctx := context.Background()
	for _, name := range []string{"nrf", "udr", "udm", "ausf"} {
		n, err := NewNF(cfg, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	hc := httpsbi.NewClient(nil)
	nrf := ops.NewClient(httpsbi.NewCaller(hc, cfg.SBI.NRFRoot()), "")
	for _, tp := range []sbi.NFType{sbi.NFTypeUDR, sbi.NFTypeUDM, sbi.NFTypeAUSF} {
		if err := poll.Until(ctx, 5*time.Second, 10*time.Millisecond, func() bool {
			res, err := nrf.Discover(ctx, tp, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF})
			return err == nil && len(res.NfInstances) == 1
		}); err != nil {
			t.Fatalf("%s not registered", tp)
		}
	}

	info := &models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: "imsi-208930000000001", ServingNetworkName: "5G:mnc093.mcc208.3gppnetwork.org"}
	ausfRoot := "http://" + cfg.SBI.Listen["ausf"]
	// No token: 401 with a Bearer challenge.
	if _, _, err := ops.NewClient(httpsbi.NewCaller(hc, ausfRoot), "").Authenticate(ctx, info); sbi.StatusOf(err) != 401 {
		t.Errorf("without a token: %v", err)
	}
	// An AMF registered with the NRF gets tokens for nausf-auth.
	amfID := identity.NewNFInstanceID()
	prof, _ := nrfclient.ProfileFor(sbi.NFTypeAMF, amfID, "http://127.0.0.1:1", models.Nrf_NFMgmt_ServiceName_NAMF_COMM)
	if _, _, err := nrf.Register(ctx, prof); err != nil {
		t.Fatal(err)
	}
	ts := nrfclient.NewTokenSource(nrf, amfID, sbi.NFTypeAMF)
	ausf := ops.NewClient(httpsbi.NewCaller(hc, ausfRoot).WithTokens(ts), "")
	id, actx, err := ausf.Authenticate(ctx, info)
	if err != nil || id == "" {
		t.Fatalf("AUSF (then UDM, then UDR), each call with a token: %q, %v", id, err)
	}
	if _, err := sbi.Av5gAkaOf(actx); err != nil {
		t.Error(err)
	}
	// A token for the UDM is no token for the AUSF (its audience).
	udmTok, err := ts.Token(ctx, "nudm-ueau")
	if err != nil {
		t.Fatal(err)
	}
	wrong := ops.NewClient(httpsbi.NewCaller(hc, ausfRoot).WithTokens(fixedToken(udmTok)), "")
	if _, _, err := wrong.Authenticate(ctx, info); sbi.StatusOf(err) != 401 {
		t.Errorf("a UDM token at the AUSF: %v", err)
	}
}

// fixedToken always presents the same token.
type fixedToken string

func (f fixedToken) Token(context.Context, string) (string, error) { return string(f), nil }
func (fixedToken) Forget(string)                                   {}

// A restored AMF's PDU session goes back to the SMF its record names
// (amf.SessionRecord.SMF, the NF instance ID of selectedSMF), found through
// the NRF by target-nf-instance-id, not to whichever SMF the NRF lists
// first (issue 36: the SMF that holds the context).
func TestResolveSMFByInstanceID(t *testing.T) {
	cfg := config.Default()
	port, err := freeport.TCP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.SBI.Listen["nrf"] = fmt.Sprintf("127.0.0.1:%d", port)
	ctx := context.Background()
	nrfNF, err := NewNF(cfg, "nrf", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nrfNF.Close() })
	if err := nrfNF.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hc := httpsbi.NewClient(nil)
	nrf := ops.NewClient(httpsbi.NewCaller(hc, cfg.SBI.NRFRoot()), "")

	// Two SMFs, each answering a release of any SM context and saying
	// which it is.
	var mu sync.Mutex
	released := map[string]int{}
	var ids []string
	for i := range 2 {
		id := identity.NewNFInstanceID()
		ids = append(ids, id)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			released[id]++
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}))
		srv.Config = httpsbi.NewServer(srv.Config.Handler, nil)
		srv.Start()
		t.Cleanup(srv.Close)
		prof, err := nrfclient.ProfileFor(sbi.NFTypeSMF, id, srv.URL, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
		if err != nil {
			t.Fatal(err)
		}
		prof.Priority = int32(i) // the first listed comes first
		if _, _, err := nrf.Register(ctx, prof); err != nil {
			t.Fatal(err)
		}
	}
	disc, err := nrfclient.NewDiscoverer(nrfclient.DiscovererConfig{NRF: nrf})
	if err != nil {
		t.Fatal(err)
	}
	sel := smfSelector{&NF{cfg: cfg, disc: disc, http: &httpBinding{client: hc}}}
	for _, want := range []string{ids[1], ids[0]} {
		smf, err := sel.ResolveSMF(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := smf.(amf.NamedSMF).NFInstanceID(); got != want {
			t.Errorf("resolved SMF names itself %q, want %q", got, want)
		}
		if err := smf.ReleaseSMContext(ctx, "ref-1", &sbi.SMContextRelease{}); err != nil {
			t.Fatalf("release at %s: %v", want, err)
		}
		mu.Lock()
		n := released[want]
		mu.Unlock()
		if n != 1 {
			t.Errorf("SMF %s got %d releases, want 1 (all: %v)", want, n, released)
		}
	}
}
