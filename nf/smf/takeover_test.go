package smf

import (
	"context"
	"net/netip"
	"testing"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// Tests of what a standby needs to take over from an SMF that died at any
// instruction (issue 36, core.Takeover): the records a unit's store keeps
// (the latest of each UE, UPF and the allocators) restore an SMF that
// hands out nothing twice and leaves nothing behind at the UPF.

// recordedSMF builds and starts an SMF on h's fakes with d as its
// Recorder, as h.smf.
func recordedSMF(t *testing.T, h *harness, d *deltas) {
	t.Helper()
	s, err := New(testConfig(), Deps{AMF: h.amf, AMFStatus: h.amf, SDM: h.sdm, PCF: h.pcf,
		UPFs: map[string]pfcp.UserPlane{"upf1": h.upf}, Recorder: d}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h.pcf.SetNotifier(s)
	h.smf, h.amf.smf = s, s
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func newDeltas() *deltas {
	return &deltas{ues: make(map[string][]*UERecord), upfs: make(map[string][]*UPFRecord)}
}

// stored is what a unit's record store holds of d's records: the latest
// of each UE (none for a UE without sessions: its key is deleted), of
// each UPF and of the allocators (core.UnitState).
func (d *deltas) stored(recovery *SMF) *Checkpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	cp := &Checkpoint{RecoveryTime: utc(recovery.RecoveryTime())}
	for _, rs := range d.ues {
		if last := rs[len(rs)-1]; len(last.Sessions) > 0 {
			cp.UEs = append(cp.UEs, *last)
		}
	}
	for _, rs := range d.upfs {
		cp.UPFs = append(cp.UPFs, *rs[len(rs)-1])
	}
	if n := len(d.alloc); n > 0 {
		a := d.alloc[n-1]
		cp.NextRef, cp.NextSEID, cp.Pools = a.NextRef, a.NextSEID, a.Pools
	}
	return cp
}

// takeOver closes h's SMF, as if its process died, and builds, restores
// from cp and starts a new one on the same fakes, recording into d.
func takeOver(t *testing.T, h *harness, cp *Checkpoint, d *deltas) {
	t.Helper()
	h.smf.Close()
	s, err := New(testConfig(), Deps{AMF: h.amf, AMFStatus: h.amf, SDM: h.sdm, PCF: h.pcf,
		UPFs: map[string]pfcp.UserPlane{"upf1": h.upf}, Recorder: d}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Restore(cp); err != nil {
		t.Fatal(err)
	}
	h.pcf.SetNotifier(s)
	h.smf, h.amf.smf = s, s
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestTakeoverContinuesAllocators (issue 36 review item 11): sessions
// established and released before the failure are in no record, yet
// the SMF that takes over hands out none of their SM context refs, CP
// F-SEIDs or UE addresses, and continues the pool's next fit where it
// stood.
func TestTakeoverContinuesAllocators(t *testing.T) {
	h := &harness{amf: newFakeAMF(t), sdm: &fakeSDM{}, upf: newFakeUPF()}
	p, err := pcf.New(pcf.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.pcf = p
	d := newDeltas()
	recordedSMF(t, h, d)
	ctx := context.Background()

	refs, seids, ips := map[string]bool{}, map[uint64]bool{}, map[netip.Addr]bool{}
	supis := []string{"imsi-208930000000001", "imsi-208930000000002", "imsi-208930000000003"}
	for i, supi := range supis {
		ref, _, _ := h.establish(t, supi, 1, "internet")
		r := h.session(t, supi, 1)
		refs[ref], seids[r.CPSEID], ips[r.UEIP] = true, true, true
		if i > 0 { // the first stays
			if err := h.smf.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.settle(t)
	cp := d.stored(h.smf)
	if len(cp.UEs) != 1 {
		t.Fatalf("%d UEs stored, want the one with a session", len(cp.UEs))
	}
	takeOver(t, h, cp, d)

	ref, _, _ := h.establish(t, "imsi-208930000000004", 1, "internet")
	r := h.session(t, "imsi-208930000000004", 1)
	if refs[ref] || seids[r.CPSEID] || ips[r.UEIP] {
		t.Errorf("after the takeover: ref %s, CP F-SEID %d, UE IP %v; handed out before: %v %v %v", ref, r.CPSEID, r.UEIP, refs, seids, ips)
	}
	// Exactly where the dead SMF would have gone on.
	if want := netip.MustParseAddr("10.60.0.5"); ref != "4" || r.CPSEID != 4 || r.UEIP != want {
		t.Errorf("after the takeover: ref %s, CP F-SEID %d, UE IP %v; want 4, 4, %v", ref, r.CPSEID, r.UEIP, want)
	}
}

// TestTakeoverAsksTheSameUPF: intent before the request. While a PFCP
// Session Establishment Request is out, the store already says which UPF,
// in which life, was asked (SessionRecord.Asked); an SMF restored from
// that store (the first died awaiting the answer) asks the same UPF again
// with the same CP F-SEID, which answers with the session it has, and the
// UE gets its Accept.
func TestTakeoverAsksTheSameUPF(t *testing.T) {
	h := &harness{amf: newFakeAMF(t), sdm: &fakeSDM{}, upf: newFakeUPF()}
	p, err := pcf.New(pcf.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.pcf = p
	d := newDeltas()
	recordedSMF(t, h, d)
	h.upf.mu.Lock()
	h.upf.holdEstablishments, h.upf.gate = true, make(chan struct{})
	h.upf.mu.Unlock()

	created, err := h.smf.CreateSMContext(context.Background(),
		createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(testSUPI, 1, created.Ref)
	waitFor(t, "the establishment request at the UPF", func() bool { return h.upf.holds() == 1 })
	cp := d.stored(h.smf)
	if len(cp.UEs) != 1 || len(cp.UEs[0].Sessions) != 1 {
		t.Fatalf("stored %+v", cp.UEs)
	}
	r := cp.UEs[0].Sessions[0]
	if r.Asked != 1 || r.UPF != "upf1" || r.UPSEID != 0 {
		t.Fatalf("stored while the request is out: asked life %d of %q, UP F-SEID %d; want life 1 of upf1, none", r.Asked, r.UPF, r.UPSEID)
	}
	h.upf.mu.Lock()
	h.upf.holdEstablishments = false
	h.upf.mu.Unlock()
	takeOver(t, h, cp, newDeltas())

	tr := h.amf.next(t)
	if _, ok := tr.n1.(*nas.PDUSessionEstablishmentAccept); !ok {
		t.Fatalf("after the takeover the AMF got %T, want the Accept", tr.n1)
	}
	if n := h.upf.establishmentsOf(r.CPSEID); n != 1 {
		t.Errorf("%d establishments for CP F-SEID %d after the takeover, want 1", n, r.CPSEID)
	}
	if got := h.session(t, testSUPI, 1); got.UPSEID == 0 || got.Asked != 0 || got.State != uint8(stWaitN2Setup) {
		t.Errorf("restored session after its establishment: %+v", got)
	}
}
