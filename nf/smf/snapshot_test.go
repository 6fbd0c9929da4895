package smf

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
)

// TestSessionsSnapshot: the operator's view of a UE's sessions gives the
// address, state and UPF of each, and nothing once they are released.
func TestSessionsSnapshot(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ref1, acc1, _ := h.establish(t, testSUPI, 1, "internet")
	ref2, acc2, _ := h.establish(t, testSUPI, 2, "ims")

	got, err := h.smf.Sessions(ctx, testSUPI)
	if err != nil {
		t.Fatal(err)
	}
	n3 := netip.MustParseAddr("10.100.3.2")
	want := []SessionInfo{
		{SUPI: testSUPI, ID: 1, Ref: ref1, DNN: "internet", SNSSAI: sliceA, UEIP: acc1.PDUAddress.IPv4, State: "active", UpCnx: "ACTIVATED", UPF: "upf1", UPFN3: n3},
		{SUPI: testSUPI, ID: 2, Ref: ref2, DNN: "ims", SNSSAI: sliceA, UEIP: acc2.PDUAddress.IPv4, State: "active", UpCnx: "ACTIVATED", UPF: "upf1", UPFN3: n3},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sessions\n got %+v\nwant %+v", got, want)
	}
	if !got[0].UEIP.IsValid() || got[0].UEIP == got[1].UEIP {
		t.Errorf("UE addresses %v %v", got[0].UEIP, got[1].UEIP)
	}
	all, busy, err := h.smf.AllSessions(ctx)
	if err != nil || busy != 0 || len(all) != 1 || fmt.Sprint(all[testSUPI]) != fmt.Sprint(want) {
		t.Errorf("AllSessions = %+v, busy %d, %v", all, busy, err)
	}
	if s, err := h.smf.Sessions(ctx, "imsi-208930000000099"); err != nil || len(s) != 0 {
		t.Errorf("unknown SUPI: %+v, %v", s, err)
	}
	if n := h.smf.ues.Len(); n != 1 {
		t.Errorf("%d UE states after reading an unknown SUPI, want 1: a snapshot creates nothing", n)
	}
}

// TestSessionsSnapshotBusyExecutor: a held executor costs the caller's
// deadline, not more.
func TestSessionsSnapshotBusyExecutor(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	held := make(chan struct{})
	defer close(held)
	h.smf.ues.Get(testSUPI).exec.Post(func() { <-held })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := h.smf.Sessions(ctx, testSUPI); err == nil {
		t.Error("held executor: no error")
	}
	if all, busy, err := h.smf.AllSessions(ctx); err != nil || busy != 1 || len(all) != 0 {
		t.Errorf("AllSessions = %+v, busy %d, %v; want one busy", all, busy, err)
	}
}

// TestSessionsSnapshotDuringProcedures reads every session while UEs
// establish theirs: with -race, a field read outside its executor fails.
func TestSessionsSnapshotDuringProcedures(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	h.amf.auto = true
	stop := make(chan struct{})
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
			if _, _, err := h.smf.AllSessions(context.Background()); err != nil {
				t.Error(err)
				return
			}
			if _, err := h.smf.Sessions(context.Background(), testSUPI); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	const ues = 10
	var wg sync.WaitGroup
	for i := range ues {
		supi := fmt.Sprintf("imsi-2089300000002%02d", i)
		if i == 0 {
			supi = testSUPI
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			created, err := h.smf.CreateSMContext(context.Background(), createReq(supi, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil)))
			if err != nil {
				t.Error(err)
				return
			}
			h.amf.setRef(supi, 1, created.Ref)
		}()
	}
	wg.Wait()
	for range ues {
		h.amf.next(t)
	}
	waitForCond(t, "sessions established", func() bool { return h.smf.Stats().Established == ues })
	close(stop)
	reader.Wait()
	all, busy, err := h.smf.AllSessions(context.Background())
	if err != nil || busy != 0 || len(all) != ues {
		t.Fatalf("%d UEs with sessions, busy %d, %v; want %d", len(all), busy, err, ues)
	}
}

// TestGatherSessionsAfterDeadline: snapshots delivered before the deadline
// are all kept, though ctx.Done is ready too (a select between the two
// picks either, and dropped about half): 20 delivered and one never, with
// the context already ended, give 20 and one busy.
func TestGatherSessionsAfterDeadline(t *testing.T) {
	ch := make(chan read[[]SessionInfo], 21)
	for i := range 20 {
		ch <- read[[]SessionInfo]{v: []SessionInfo{{SUPI: fmt.Sprintf("imsi-2089300000%05d", i), ID: 1}}, ok: true}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var all []read[[]SessionInfo]
	busy := gather(ctx, ch, 21, func(r read[[]SessionInfo]) { all = append(all, r) })
	if len(all) != 20 || busy != 1 {
		t.Fatalf("%d UEs' sessions read, %d busy; want 20 and 1", len(all), busy)
	}
}
