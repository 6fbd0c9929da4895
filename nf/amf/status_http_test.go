package amf

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
)

// TestSMContextReleasedBySMFOverHTTP: TS 29.502 §5.2.2.10, TS 23.502
// §4.3.4.2 step 11. The SMF notifies the release of an SM context at the
// smContextStatusUri the AMF gave (an absolute URI under its apiRoot);
// over the HTTP binding the AMF's callback sees the request's path only.
// The AMF forgets the session all the same, and does not release the
// context again when the UE deregisters: the SMF would answer 404.
func TestSMContextReleasedBySMFOverHTTP(t *testing.T) {
	var h http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	srv.Config = httpsbi.NewServer(srv.Config.Handler, nil)
	root := "http://" + srv.Listener.Addr().String()
	smf := newFakeSMF()
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMF = smf
	cfg := testConfig()
	cfg.APIRoot = root
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	h = httpsbi.NewHandler(nil, a)
	srv.Start()
	t.Cleanup(srv.Close)
	// The SMF reaches the AMF (N1N2MessageTransfer, the status
	// notification) over HTTP/2.
	smf.amf = ops.NewClient(httpsbi.NewCaller(httpsbi.NewClient(nil), root), "6f1c0b0e-0000-4000-8000-000000000009")
	t.Cleanup(func() {
		smf.checkCallbacks(t)
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	u := registeredUE(t, a, hn)
	u.establish(5, "internet")
	waitFor(t, "session active", func() bool { return len(smf.callsOf("update")) == 1 })
	// UE-requested release (TS 23.502 §4.3.4.2): the SMF releases the
	// context once the UE completes, and notifies the AMF.
	u.sendSM(5, 0, "", nil, smMsg(5, 2, nas.MsgPDUSessionReleaseRequest))
	expect[*ngap.PDUSessionResourceReleaseCommand](t, u.recvNGAP())
	u.g.send(1, &ngap.PDUSessionResourceReleaseResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Released: []ngap.PDUSessionResourceItem{{ID: 5, Transfer: []byte("release-response-transfer")}}})
	u.sendSM(5, 0, "", nil, smMsg(5, 2, nas.MsgPDUSessionReleaseComplete))
	// The notification goes from another goroutine the release started:
	// wait for its effect (a WaitGroup Wait here could run before its Add).
	waitFor(t, "session forgotten on the SMF's notification", func() bool { return a.Stats().PDUSessions == 0 })

	u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
	smf.mu.Lock()
	stale := smf.staleReleases
	smf.mu.Unlock()
	if stale != 0 || len(smf.callsOf("release")) != 0 {
		t.Errorf("%d releases of a context the SMF had released, %d releases in all; want none", stale, len(smf.callsOf("release")))
	}
}
