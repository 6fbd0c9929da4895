package upfu_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

func dlPacket(dst netip.Addr, sport uint16, size int) upfu.Packet {
	return withHeadroom(ipv4UDP(dnIP, dst, sport, 1000, size), netipZero)
}

// waitStats polls the pipeline's counters until cond holds.
func waitStats(t *testing.T, p *upfu.Pipeline, cond func(upfu.Stats) bool) upfu.Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := p.Stats()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
}

// TS 29.244 §5.2.4: the BAR's Suggested Buffering Packets Count bounds the
// session's buffer; without one the UPF default does.
func TestBufferBARPacketCount(t *testing.T) {
	p := newPipeline(t, upfu.Config{BufferPackets: 100})
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer, bufPackets: 2}))
	w := p.NewWorker()
	for i := range 5 {
		w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), 60)}, nil)
	}
	if st := p.Stats(); st.Buffered != 2 || st.BufferedBytes != 120 || st.Drops["buffer-full"] != 3 || st.BufferedTotal != 2 {
		t.Fatalf("BAR count 2: %+v", st)
	}
	// The BAR goes: the default applies, to the same buffer.
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer}))
	for i := range 5 {
		w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), 60)}, nil)
	}
	if st := p.Stats(); st.Buffered != 7 || st.Drops["buffer-full"] != 3 {
		t.Fatalf("default count: %+v", st)
	}
}

// The global cap applies across sessions; a packet it refuses raises no
// report and starts no episode, and drained bytes free room.
func TestBufferGlobalCap(t *testing.T) {
	p := newPipeline(t, upfu.Config{BufferBytes: 1000, BufferGlobalBytes: 1000})
	rep := runReports(t, p)
	snk := &sink{}
	p.SetSink(snk)
	ue2 := netip.MustParseAddr("10.60.0.2")
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP, seid: 43, ue: ue2, ulTEID: 0x101}))
	w := p.NewWorker()
	for i := range 5 {
		w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), 200)}, nil)
	}
	w.Downlink([]upfu.Packet{dlPacket(ue2, 1, 200)}, nil)
	st := p.Stats()
	if st.Buffered != 5 || st.BufferedBytes != 1000 || st.Drops["buffer-global-cap"] != 1 {
		t.Fatalf("at the cap: %+v", st)
	}
	if got := rep.wait(t, 1); len(got) != 1 {
		t.Fatalf("reports %+v", got)
	}
	// Session 42 drains: room for session 43, whose next packet is the
	// first of its episode.
	p.Install(session(t, sessionOpts{}))
	if len(snk.pkts) != 5 {
		t.Fatalf("drained %d", len(snk.pkts))
	}
	w.Downlink([]upfu.Packet{dlPacket(ue2, 2, 200)}, nil)
	if st := p.Stats(); st.Buffered != 1 || st.BufferedBytes != 200 {
		t.Fatalf("after the drain: %+v", st)
	}
	if got := rep.wait(t, 2); len(got) != 2 || got[1].PDRID != 2 {
		t.Fatalf("reports %+v", got)
	}
}

// Packets older than the hold time are discarded by Run's periodic check;
// the episode ends, so the next packet reports again.
func TestBufferHoldTimeExpiry(t *testing.T) {
	p := newPipeline(t, upfu.Config{BufferHold: 20 * time.Millisecond})
	rep := runReports(t, p)
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	w := p.NewWorker()
	for i := range 3 {
		w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), 100)}, nil)
	}
	rep.wait(t, 1)
	st := waitStats(t, p, func(st upfu.Stats) bool { return st.Drops["buffer-expired"] == 3 })
	if st.Buffered != 0 || st.BufferedBytes != 0 {
		t.Fatalf("after expiry %+v", st)
	}
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 9, 100)}, nil)
	if got := rep.wait(t, 2); got[1].Kind != rules.ReportDownlinkData || got[1].PDRID != 2 || got[1].QFI != qfi {
		t.Fatalf("second episode's report %+v", got[1])
	}
}

// Expiry on push and on drain, without Run: a drain sends only what is
// younger than the hold time.
func TestBufferExpiryOnPushAndDrain(t *testing.T) {
	p := newPipeline(t, upfu.Config{BufferHold: 30 * time.Millisecond})
	snk := &sink{}
	p.SetSink(snk)
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer}))
	w := p.NewWorker()
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 1, 100), dlPacket(ueIP, 2, 100)}, nil)
	time.Sleep(40 * time.Millisecond)
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 3, 100)}, nil) // expires the first two
	if st := p.Stats(); st.Buffered != 1 || st.Drops["buffer-expired"] != 2 {
		t.Fatalf("after push %+v", st)
	}
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 4, 100)}, nil)
	time.Sleep(40 * time.Millisecond)
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 5, 100)}, nil) // expires 3 and 4
	p.Install(session(t, sessionOpts{}))
	if len(snk.pkts) != 1 {
		t.Fatalf("drained %d packets, want the one younger than the hold time", len(snk.pkts))
	}
	var h gtpu.Header
	if err := gtpu.Parse(snk.pkts[0].Data(), &h); err != nil || !bytes.Equal(h.Payload(snk.pkts[0].Data()), ipv4UDP(dnIP, ueIP, 5, 1000, 100)) {
		t.Errorf("drained the wrong packet (%v)", err)
	}
	if st := p.Stats(); st.Buffered != 0 || st.BufferedBytes != 0 || st.Drops["buffer-expired"] != 4 {
		t.Errorf("after drain %+v", st)
	}
}

// One Downlink Data Report per episode, however many packets it buffers or
// drops; a drop of the whole buffer (FAR to DROP) or a removal ends the
// episode.
func TestOneReportPerEpisode(t *testing.T) {
	p := newPipeline(t, upfu.Config{BufferPackets: 4})
	rep := runReports(t, p)
	w := p.NewWorker()
	buffering := session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP})
	p.Install(buffering)
	for i := range 10 {
		w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), 60)}, nil)
	}
	rep.wait(t, 1)
	// A modification that still buffers keeps the episode.
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 99, 60)}, nil)
	// FAR to DROP: the buffer is discarded.
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionDrop}))
	st := p.Stats()
	if st.Buffered != 0 || st.Drops["buffer-discarded"] != 4 || st.Drops["buffer-full"] != 7 {
		t.Fatalf("after DROP %+v", st)
	}
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 1, 60)}, nil)
	rep.wait(t, 2)
	// Removal discards, and a new session reports afresh.
	p.Remove(seid)
	if st := p.Stats(); st.Buffered != 0 || st.Drops["buffer-discarded"] != 5 {
		t.Fatalf("after Remove %+v", st)
	}
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 1, 60), dlPacket(ueIP, 2, 60)}, nil)
	got := rep.wait(t, 3)
	time.Sleep(20 * time.Millisecond) // a fourth report would come now
	rep.mu.Lock()
	n := len(rep.got)
	rep.mu.Unlock()
	if n != 3 {
		t.Errorf("%d reports, want 3: %+v", n, got)
	}
}

// Packets a plain BUFF kept (an Error Indication stopped the tunnel before
// the SMF deactivated the user plane) are reported when the FAR turns to
// BUFF|NOCP: no later packet may come to notify for them, and without the
// report nobody would page the UE (TS 29.244 §5.2.4.1). Once only.
func TestNOCPOverHeldPacketsReports(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	rep := runReports(t, p)
	w := p.NewWorker()
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer}))
	for i := range 3 {
		w.Downlink([]upfu.Packet{dlPacket(ueIP, uint16(i), 60)}, nil)
	}
	time.Sleep(20 * time.Millisecond)
	rep.mu.Lock()
	n := len(rep.got)
	rep.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d reports for packets buffered without NOCP", n)
	}
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	got := rep.wait(t, 1)
	if got[0].Kind != rules.ReportDownlinkData || got[0].PDRID != 2 || got[0].QFI != qfi {
		t.Errorf("report %+v", got[0])
	}
	// The episode has notified: neither a new packet nor the same rules
	// installed again report a second time.
	w.Downlink([]upfu.Packet{dlPacket(ueIP, 9, 60)}, nil)
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	time.Sleep(20 * time.Millisecond)
	rep.mu.Lock()
	n = len(rep.got)
	rep.mu.Unlock()
	if n != 1 {
		t.Errorf("%d reports, want 1", n)
	}
}

// Buffering a packet allocates nothing once the pool has storage: after
// one episode has grown it, the next reuses it.
func TestBufferingNoAllocations(t *testing.T) {
	p := newPipeline(t, upfu.Config{BufferPackets: 1 << 20, BufferBytes: 12 << 10})
	buffering := session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP})
	p.Install(buffering)
	w := p.NewWorker()
	const batch = 32
	in := make([]upfu.Packet, batch)
	for i := range in {
		in[i] = dlPacket(ueIP, uint16(i), 100)
	}
	for range 4 {
		w.Downlink(in, nil)
	}
	p.Install(session(t, sessionOpts{})) // drain: the storage goes back to the pool
	p.Install(buffering)
	// 32 packets of 100 bytes per run, 12 KiB per session: the fourth run
	// fills the buffer, the rest are dropped; both without allocation.
	if a := testing.AllocsPerRun(6, func() { w.Downlink(in, nil) }); a != 0 {
		t.Errorf("%v allocations per batch", a)
	}
	if st := p.Stats(); st.BufferedBytes != 12<<10/100*100 || st.Drops["buffer-full"] == 0 {
		t.Errorf("stats %+v", st)
	}
}
