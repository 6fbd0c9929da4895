package smf

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/pfcp"
)

// createSession asks for supi's session psi on dnn and returns the N1 of
// the transfer that answers it and how long that took.
func (h *harness) createSession(t *testing.T, supi string, psi uint8, dnn string) (nas.SMMessage, time.Duration) {
	t.Helper()
	start := time.Now()
	h.amf.clearRef(supi, psi)
	created, err := h.smf.CreateSMContext(context.Background(), createReq(supi, psi, dnn, sliceA, estRequest(t, psi, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(supi, psi, created.Ref)
	tr := h.amf.next(t)
	if tr.supi != supi || tr.psi != psi {
		t.Fatalf("transfer %+v, want %s/%d's", tr, supi, psi)
	}
	return tr.n1, time.Since(start)
}

// Two UPFs serve the DNN; upf1, with fewer sessions, answers every
// establishment "No established PFCP Association" although its Recovery
// Time Stamp does not change (and even after the SMF associates again).
// Each establishment tries upf1 once, passes it over until it has
// associated again, and goes to upf2 at once: no retry loop against upf1,
// no wait, no reject.
func TestEstablishmentPassesOverUnassociatedUPF(t *testing.T) {
	cfg := testConfig()
	cfg.Timers.UPFWait = 2 * time.Second
	cfg.UPFs = append(cfg.UPFs, UPFConfig{Name: "upf2", N4: "direct", N3: "10.100.3.3", DNNs: []string{"internet"}})
	up1, up2 := newFakeUPF(), newFakeUPF()
	up1.brokenAssoc = true
	h := buildHarness(t, cfg, pcf.Config{}, map[string]*fakeUPF{"upf1": up1, "upf2": up2})
	if err := h.smf.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		n1, took := h.createSession(t, fmt.Sprintf("imsi-2089300000001%02d", i), 1, "internet")
		if _, ok := n1.(*nas.PDUSessionEstablishmentAccept); !ok {
			t.Fatalf("establishment %d: %T after %v, want an Accept", i, n1, took)
		}
		if took > time.Second {
			t.Errorf("establishment %d took %v", i, took)
		}
	}
	up1.mu.Lock()
	tries := len(up1.establishes)
	up1.mu.Unlock()
	if tries > 2*n || up2.live() != n {
		t.Errorf("upf1 got %d establishments for %d sessions (want at most %d), upf2 holds %d", tries, n, 2*n, up2.live())
	}
	if st := h.smf.Stats(); st.Rejected != 0 || st.EstablishmentsHeld != 0 || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A UPF that lost its association with the SMF without restarting (same
// Recovery Time Stamp; it lost the SMF's sessions with it) is associated
// again when a session request finds out, and its sessions are restored:
// the establishment that found out waits and completes, and does not time
// out for want of an association (TS 29.244 §6.3.2.2).
func TestUnassociatedUPFIsAssociatedAgain(t *testing.T) {
	cfg := testConfig()
	cfg.Timers.Heartbeat = time.Hour // only the refusal can start it
	cfg.Timers.UPFWait = 2 * time.Second
	h := newHarness(t, cfg, pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	h.upf.loseAssociation()
	n1, took := h.createSession(t, testSUPI, 2, "internet")
	if _, ok := n1.(*nas.PDUSessionEstablishmentAccept); !ok {
		t.Fatalf("session at the UPF that lost its association: %T after %v, want an Accept", n1, took)
	}
	waitFor(t, "restoration", func() bool { return h.smf.Stats().SessionsRestored == 1 })
	h.upf.mu.Lock()
	assocs := h.upf.assocs
	h.upf.mu.Unlock()
	if st := h.smf.Stats(); assocs != 2 || st.Rejected != 0 || h.upf.live() != 2 || st.N4Sessions != 2 {
		t.Errorf("%d associations, UPF holds %d sessions, stats %+v", assocs, h.upf.live(), st)
	}
}

// An establishment's attempts after a wait end with the wait
// (Timers.UPFWait from the request), not a full PFCP deadline later: the
// UE gets its answer before it sends the request again.
func TestWaitingEstablishmentEndsWithItsWait(t *testing.T) {
	cfg := fastSupervision(testConfig())
	cfg.Timers.UPFWait = 300 * time.Millisecond
	cfg.Timers.PFCPTimeout = 3 * time.Second
	h := newHarness(t, cfg, pcf.Config{})
	h.upf.setDown(true)
	waitFor(t, "UPF down", func() bool { return h.smf.UPFStates()["upf1"] == "down" })
	// The UPF associates again but then answers no establishment: the
	// waiting establishment's retry gets no answer.
	h.upf.mu.Lock()
	h.upf.holdEstablishments = true
	h.upf.gate = make(chan struct{})
	h.upf.mu.Unlock()
	t.Cleanup(func() { close(h.upf.gate) })
	start := time.Now()
	h.amf.clearRef(testSUPI, 1)
	created, err := h.smf.CreateSMContext(context.Background(), createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(testSUPI, 1, created.Ref)
	time.Sleep(100 * time.Millisecond) // waiting
	h.upf.setDown(false)
	tr := h.amf.next(t)
	took := time.Since(start)
	if rej, ok := tr.n1.(*nas.PDUSessionEstablishmentReject); !ok || rej.Cause != nas.CauseInsufficientResources5GSM {
		t.Fatalf("%+v after %v, want a Reject #26", tr.n1, took)
	}
	if took > cfg.Timers.UPFWait+time.Second {
		t.Errorf("rejected after %v, UPFWait %v, PFCPTimeout %v", took, cfg.Timers.UPFWait, cfg.Timers.PFCPTimeout)
	}
}

// Only a UPF that did not answer or has lost its association makes an
// establishment wait for it or try another; a UPF that refuses the
// session for another reason, or answers it wrongly, fails it at once.
func TestWaitsForUPF(t *testing.T) {
	for _, c := range []struct {
		name  string
		upf   func(f *fakeUPF)
		waits bool
	}{
		{"no answer", func(f *fakeUPF) { f.holdEstablishments, f.gate = true, make(chan struct{}) }, true},
		{"no association", func(f *fakeUPF) { f.brokenAssoc = true }, true},
		{"no resources", func(f *fakeUPF) { f.reject = true }, false},
		{"no UP F-SEID", func(f *fakeUPF) { f.noFSEID = true }, false},
		{"rule creation failure", func(f *fakeUPF) { f.establishCause = pfcp.CauseRuleCreationModificationFailure }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Timers.Heartbeat = time.Hour
			cfg.Timers.PFCPTimeout = 100 * time.Millisecond
			cfg.Timers.UPFWait = 400 * time.Millisecond
			h := newHarness(t, cfg, pcf.Config{})
			h.upf.mu.Lock()
			c.upf(h.upf)
			h.upf.mu.Unlock()
			if h.upf.gate != nil {
				t.Cleanup(func() { close(h.upf.gate) })
			}
			n1, took := h.createSession(t, testSUPI, 1, "internet")
			if rej, ok := n1.(*nas.PDUSessionEstablishmentReject); !ok || rej.Cause != nas.CauseInsufficientResources5GSM {
				t.Fatalf("%+v, want a Reject #26", n1)
			}
			waited := took >= cfg.Timers.UPFWait-50*time.Millisecond
			if waited != c.waits || (h.smf.Stats().EstablishmentsHeld != 0) != c.waits {
				t.Errorf("rejected after %v (UPFWait %v), %d held: want waiting %v", took, cfg.Timers.UPFWait,
					h.smf.Stats().EstablishmentsHeld, c.waits)
			}
		})
	}
}
