package amf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/ngap"
)

func snapshotCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestUESnapshot: the operator's view of a UE follows its state machine,
// its RAN leg and its PDU sessions, connected and idle.
func TestUESnapshot(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	before := time.Now()
	u := registeredUE(t, a, hn)
	u.establish(1, "")
	u.establish(2, "ims")
	waitFor(t, "sessions active", func() bool { return len(smf.callsOf("update")) == 2 })
	ctx := snapshotCtx(t)

	got, err := a.UE(ctx, u.supi)
	if err != nil {
		t.Fatal(err)
	}
	if got.SUPI != u.supi || got.SUCI != "" || got.RM != "RM-REGISTERED" || got.CM != "CM-CONNECTED" ||
		got.Procedure != "none" || !got.Reachable || got.GUTI == nil || got.Target != nil {
		t.Errorf("UE %+v", got)
	}
	if got.LastActivity.Before(before) {
		t.Errorf("last activity %v, before the registration at %v", got.LastActivity, before)
	}
	if len(got.RegistrationArea) != 1 || got.RegistrationArea[0] != testTAI || len(got.AllowedNSSAI) != 1 || got.AllowedNSSAI[0] != testSlice {
		t.Errorf("registration area %v, allowed NSSAI %v", got.RegistrationArea, got.AllowedNSSAI)
	}
	r := got.RAN
	if r == nil || r.AMFUENGAPID != u.amfID || r.RANUENGAPID != u.ranID || r.State != "context" ||
		r.TAI != testTAI || r.GNB.PLMN != testPLMN || r.GNB.GNBID == 0 || r.GNBAddress == "" {
		t.Fatalf("RAN leg %+v, want AMF UE NGAP ID %d, RAN UE NGAP ID %d", r, u.amfID, u.ranID)
	}
	want := []PDUSessionInfo{
		{ID: 1, DNN: "internet", SNSSAI: testSlice, SMContextRef: "sm-1", UserPlane: "active"},
		{ID: 2, DNN: "ims", SNSSAI: testSlice, SMContextRef: "sm-2", UserPlane: "active"},
	}
	if fmt.Sprint(got.Sessions) != fmt.Sprint(want) {
		t.Errorf("sessions\n got %+v\nwant %+v", got.Sessions, want)
	}

	// CM-IDLE: no RAN leg, the sessions' user plane deactivated.
	u.g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}})
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "CM-IDLE", func() bool { return a.Stats().ConnectedUEs == 0 })
	got, err = a.UE(ctx, u.supi)
	if err != nil {
		t.Fatal(err)
	}
	if got.CM != "CM-IDLE" || got.RM != "RM-REGISTERED" || got.RAN != nil || len(got.Sessions) != 2 ||
		got.Sessions[0].UserPlane != "deactivated" || got.Sessions[1].UserPlane != "deactivated" {
		t.Errorf("idle UE %+v, sessions %+v", got, got.Sessions)
	}

	all, busy, err := a.UEs(ctx)
	if err != nil || busy != 0 || len(all) != 1 || all[0].SUPI != u.supi {
		t.Errorf("UEs = %+v, busy %d, %v", all, busy, err)
	}
	if _, err := a.UE(ctx, identity.IMSI(testPLMN, "0000000999")); !errors.Is(err, ErrNoUE) {
		t.Errorf("unknown SUPI: %v, want ErrNoUE", err)
	}
}

// TestUESnapshotBusyExecutor: a UE whose executor is held (an SBI call
// waiting for its deadline) delays no snapshot past the caller's deadline;
// the list says how many it left out.
func TestUESnapshotBusyExecutor(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u1 := newTestUE(t, g, hn, "0000000001")
	u1.register()
	u2 := newTestUE(t, g, hn, "0000000002")
	u2.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 2 })
	held := make(chan struct{})
	defer close(held)
	a.supis.Get(u2.supi).exec.Post(func() { <-held })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	all, busy, err := a.UEs(ctx)
	if err != nil || busy != 1 || len(all) != 1 || all[0].SUPI != u1.supi {
		t.Errorf("UEs = %+v, busy %d, %v; want %s and one busy", all, busy, err, u1.supi)
	}
	if _, err := a.UE(ctx, u2.supi); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("held UE: %v, want the deadline", err)
	}
}

// TestUESnapshotsDuringProcedures takes snapshots of every UE while UEs
// register and establish sessions: with -race, a field read outside its
// executor fails the test.
func TestUESnapshotsDuringProcedures(t *testing.T) {
	smf := newFakeSMF()
	smf.mixed = true
	a, hn := newTestAMFWithSMF(t, smf)
	const n = 20
	stop := make(chan struct{})
	var snaps atomic.Int64
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ues, _, err := a.UEs(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			for _, u := range ues {
				if u.SUPI != "" {
					if _, err := a.UE(context.Background(), u.SUPI); err != nil && !errors.Is(err, ErrNoUE) {
						t.Error(err)
					}
				}
			}
			snaps.Add(1)
		}
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := setupGNB(t, a)
			u := newTestUE(t, g, hn, fmt.Sprintf("%010d", i+1))
			u.register()
			u.establish(1, "")
		}()
	}
	wg.Wait()
	waitFor(t, "all sessions set up", func() bool { return len(smf.callsOf("update")) == n })
	close(stop)
	reader.Wait()
	ues, busy, err := a.UEs(snapshotCtx(t))
	if err != nil || busy != 0 || len(ues) != n {
		t.Fatalf("%d UEs, busy %d, %v; want %d", len(ues), busy, err, n)
	}
	for i, u := range ues {
		if want := identity.IMSI(testPLMN, fmt.Sprintf("%010d", i+1)); u.SUPI != want || u.RM != "RM-REGISTERED" || len(u.Sessions) != 1 {
			t.Errorf("UE %d: %+v, want %s registered with one session", i, u, want)
		}
	}
	t.Logf("%d lists taken during the procedures", snaps.Load())
}

// TestGatherUEsAfterDeadline: snapshots delivered before the deadline are
// all kept, though ctx.Done is ready too (a select between the two picks
// either, and dropped about half): 20 delivered and one never, with the
// context already ended, give 20 and one busy.
func TestGatherUEsAfterDeadline(t *testing.T) {
	ch := make(chan taken[UEInfo], 21)
	for i := range 20 {
		ch <- taken[UEInfo]{v: UEInfo{SUPI: fmt.Sprintf("imsi-2089300000%05d", i)}, ok: true}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ues, busy := gather(ctx, ch, 21)
	if len(ues) != 20 || busy != 1 {
		t.Fatalf("%d snapshots read, %d busy; want 20 and 1", len(ues), busy)
	}
}
