package amf

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

// TestStalledSMFCallStallsOnlyItsUE: one UE's Nsmf_PDUSession_CreateSMContext
// does not come back; 100 other UEs on the same gNB must still register,
// because the gNB's reader only dispatches and every UE has its own
// executor. When the SMF answers, the stalled UE's procedure goes on.
func TestStalledSMFCallStallsOnlyItsUE(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	g := setupGNB(t, a)
	stuck := newTestUE(t, g, hn, "0000000001")
	stuck.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })

	release := make(chan struct{})
	smf.stall = map[string]chan struct{}{stuck.supi: release}
	stuck.sendSM(1, requestInitial, "internet", nil, smMsg(1, 1, nas.MsgPDUSessionEstablishmentRequest))
	waitFor(t, "the stalled CreateSMContext", func() bool { return len(smf.callsOf("create")) == 1 })

	start := time.Now()
	for i := range 100 {
		u := newTestUE(t, g, hn, fmt.Sprintf("00000010%02d", i))
		u.register()
	}
	waitFor(t, "101 registered", func() bool { return a.Stats().RegisteredUEs == 101 })
	t.Logf("100 registrations beside a stalled SMF call: %v", time.Since(start))

	close(release)
	req := expect[*ngap.PDUSessionResourceSetupRequest](t, stuck.recvNGAP())
	if len(req.Items) != 1 || req.Items[0].ID != 1 {
		t.Fatalf("stalled UE's setup request %+v", req.Items)
	}
}

// TestSMFDeadlineEndsTheProcedure: an SMF that never answers costs the UE
// the SBI deadline, then the failure path runs: the 5GSM message goes back
// to the UE as not forwarded (TS 24.501 §5.4.5.3.1 e), cause #90), and the
// UE's executor is free again.
func TestSMFDeadlineEndsTheProcedure(t *testing.T) {
	smf := newFakeSMF()
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMF = smf
	cfg := testConfig()
	cfg.Timers.SBI = 200 * time.Millisecond
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	smf.amf = a
	never := make(chan struct{})
	t.Cleanup(func() {
		close(never)
		smf.checkCallbacks(t)
		a.Close()
	})
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	smf.stall = map[string]chan struct{}{u.supi: never}

	start := time.Now()
	u.sendSM(1, requestInitial, "internet", nil, smMsg(1, 1, nas.MsgPDUSessionEstablishmentRequest))
	dl := expect[*nas.DLNASTransport](t, u.recvNAS())
	if took := time.Since(start); took < cfg.Timers.SBI {
		t.Errorf("answered after %v, before the %v deadline", took, cfg.Timers.SBI)
	}
	if dl.Cause != nas.CausePayloadNotForwarded || dl.PDUSessionID != 1 {
		t.Fatalf("DL NAS Transport cause %d session %d, want #90 for session 1", dl.Cause, dl.PDUSessionID)
	}
	if s := a.Stats(); s.PDUSessions != 0 || s.SMContextsRejected != 1 {
		t.Errorf("stats %+v", s)
	}
	// The UE's executor is free: a deregistration goes through at once.
	u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
}

// deadPeerConn is an association whose peer is gone: closing it waits out
// the SCTP shutdown before giving up, as the userspace stack does.
type deadPeerConn struct {
	*memConn
	wait time.Duration
	once *sync.Once
	// inflight counts the closes waiting at once; most is its maximum.
	inflight, most *atomic.Int32
}

func (c deadPeerConn) Close() error {
	c.once.Do(func() {
		n := c.inflight.Add(1)
		for {
			m := c.most.Load()
			if n <= m || c.most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(c.wait)
		c.inflight.Add(-1)
	})
	return c.memConn.Close()
}

// TestCloseDeadGNBsInParallel: five gNBs whose peers are gone each cost the
// shutdown wait when closed; the AMF closes them in parallel, so Close
// takes about one wait, not five.
func TestCloseDeadGNBsInParallel(t *testing.T) {
	hn := newFakeHN()
	a, err := New(testConfig(), hn.deps(), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	const wait = 400 * time.Millisecond
	var inflight, most atomic.Int32
	for range 5 {
		gEnd, amfEnd := memPipe(8)
		a.ServeConn(deadPeerConn{amfEnd, wait, new(sync.Once), &inflight, &most})
		t.Cleanup(func() { gEnd.Close() })
	}
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := most.Load(); n != 5 {
		t.Fatalf("at most %d of five dead gNBs were being closed at once, want all five", n)
	}
	t.Logf("Close took %v for five dead gNBs of %v each", time.Since(start), wait)
}
