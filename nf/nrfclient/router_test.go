package nrfclient

import (
	"context"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/ops/opstest"
)

// The router reaches the producer found through discovery, and when the
// first instance it finds does not answer (it died, the NRF still lists
// it), it drops it and reaches the next one within the same call.
func TestRouterSkipsUnreachableInstance(t *testing.T) {
	n, err := nrf.New(nrf.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	ctx := context.Background()

	// A dead instance (a port nobody listens on), sorted first, and a live one.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	p := opstest.NewProducer()
	srv := httptest.NewUnstartedServer(httpsbi.NewHandler(nil, p))
	srv.Config = httpsbi.NewServer(srv.Config.Handler, nil)
	srv.Start()
	t.Cleanup(srv.Close)
	for id, root := range map[string]string{"00000000-0000-4000-8000-000000000001": dead, "00000000-0000-4000-8000-000000000002": srv.URL} {
		prof, err := ProfileFor(sbi.NFTypeUDM, id, root, models.Nrf_NFMgmt_ServiceName_NUDM_UECM)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := n.Register(ctx, prof); err != nil {
			t.Fatal(err)
		}
	}
	d, err := NewDiscoverer(DiscovererConfig{NRF: n})
	if err != nil {
		t.Fatal(err)
	}
	hc := httpsbi.NewClient(nil)
	r := NewRouter(d, sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_UECM, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF},
		func(root string) ops.Caller { return httpsbi.NewCaller(hc, root) })
	c := ops.NewClient(r, "")
	if _, err := c.GetAMF3GPPAccess(ctx, opstest.SUPI); err != nil {
		t.Fatalf("through the live instance: %v", err)
	}
	// An answer (here 404) is the producer's, not a reason to move on.
	if _, err := c.GetAMF3GPPAccess(ctx, opstest.FailSUPI); sbi.CauseOf(err) != sbi.CauseContextNotFound {
		t.Errorf("error answer: %v", err)
	}
	// A type nobody registered: 504 TARGET_NF_NOT_REACHABLE.
	none := ops.NewClient(NewRouter(d, sbi.NFTypePCF, models.Nrf_NFMgmt_ServiceName_NPCF_SMPOLICYCONTROL, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeSMF},
		func(root string) ops.Caller { return httpsbi.NewCaller(hc, root) }), "")
	if _, _, err := none.CreateSMPolicy(ctx, &models.Pcf_SMPolCtrl_SmPolicyContextData{}); sbi.CauseOf(err) != sbi.CauseTargetNFNotReachable {
		t.Errorf("no PCF: %v", err)
	}
}
