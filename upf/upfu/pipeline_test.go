package upfu_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

func TestUplinkDecapToN6(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	p.Install(session(t, sessionOpts{netInst: "ims"}))
	w := p.NewWorker()
	inner := ipv4UDP(ueIP, dnIP, 1000, 53, 100)
	out := w.Uplink([]upfu.Packet{ulPacket(ulTEID, inner)}, nil)
	if len(out) != 1 {
		t.Fatalf("outputs %d, want 1; stats %+v", len(out), p.Stats())
	}
	if out[0].Port != 1 {
		t.Errorf("port %d, want N6 port 1 (ims)", out[0].Port)
	}
	if !bytes.Equal(out[0].Data(), inner) {
		t.Errorf("decapsulated packet differs")
	}
	st := p.Stats()
	if st.ULPackets != 1 || st.ULBytes != 100 {
		t.Errorf("stats %+v", st)
	}
}

func TestDownlinkEncap(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	p.Install(session(t, sessionOpts{}))
	w := p.NewWorker()
	inner := ipv4UDP(dnIP, ueIP, 53, 1000, 200)
	// Trailing link padding after the IP packet is not forwarded.
	in := withHeadroom(append(append([]byte(nil), inner...), 0, 0, 0), netipZero)
	out := w.Downlink([]upfu.Packet{in}, nil)
	if len(out) != 1 {
		t.Fatalf("outputs %d, want 1; stats %+v", len(out), p.Stats())
	}
	o := out[0]
	if o.Port != upfu.PortN3 || o.Peer != gnb {
		t.Errorf("to %v port %d, want %v on N3", o.Peer, o.Port, gnb)
	}
	var h gtpu.Header
	if err := gtpu.Parse(o.Data(), &h); err != nil {
		t.Fatal(err)
	}
	if h.Type != gtpu.TypeGPDU || h.TEID != dlTEID || !h.HasPDUSessionContainer || h.PDUType != gtpu.PDUTypeDL || h.QFI != qfi {
		t.Errorf("header %+v", h)
	}
	if !bytes.Equal(h.Payload(o.Data()), inner) {
		t.Errorf("payload differs")
	}
}

func TestDownlinkUnknownUEDropped(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	p.Install(session(t, sessionOpts{}))
	w := p.NewWorker()
	other := ipv4UDP(dnIP, dnIP, 1, 2, 40)
	out := w.Downlink([]upfu.Packet{withHeadroom(other, netipZero), withHeadroom([]byte{0x45, 0}, netipZero)}, nil)
	if len(out) != 0 {
		t.Fatalf("outputs %d", len(out))
	}
	d := p.Stats().Drops
	if d["no-session"] != 1 || d["malformed"] != 1 {
		t.Errorf("drops %v", d)
	}
}

func TestErrorIndicationForUnknownTEID(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	w := p.NewWorker()
	in := ulPacket(0x999, ipv4UDP(ueIP, dnIP, 1, 2, 60))
	in.Peer = mustAddrPort("10.100.3.1:40000")
	out := w.Uplink([]upfu.Packet{in}, nil)
	if len(out) != 1 {
		t.Fatalf("outputs %d, want an Error Indication", len(out))
	}
	if want := mustAddrPort("10.100.3.1:2152"); out[0].Peer != want || out[0].Port != upfu.PortN3 {
		t.Errorf("sent to %v port %d, want %v", out[0].Peer, out[0].Port, want)
	}
	ei, err := gtpu.ParseErrorIndication(out[0].Data())
	if err != nil {
		t.Fatal(err)
	}
	if ei.TEID != 0x999 || !bytes.Equal(ei.PeerAddr, n3Addr.AsSlice()) || ei.UDPPort != 40000 {
		t.Errorf("error indication %+v", ei)
	}
	// TEID 0 gets no Error Indication (§7.3.1).
	if out := w.Uplink([]upfu.Packet{ulPacket(0, ipv4UDP(ueIP, dnIP, 1, 2, 60))}, nil); len(out) != 0 {
		t.Errorf("answered a G-PDU with TEID 0")
	}
	if st := p.Stats(); st.ErrorIndicationsSent != 1 || st.Drops["unknown-teid"] != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestEcho(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	w := p.NewWorker()
	peer := mustAddrPort("10.100.3.1:33333")
	req := withHeadroom(gtpu.AppendEchoRequest(nil, 0x1234), peer)
	out := w.Uplink([]upfu.Packet{req}, nil)
	if len(out) != 1 || out[0].Peer != peer {
		t.Fatalf("outputs %+v", out)
	}
	var h gtpu.Header
	if err := gtpu.Parse(out[0].Data(), &h); err != nil {
		t.Fatal(err)
	}
	if h.Type != gtpu.TypeEchoResponse || !h.HasSeq || h.Seq != 0x1234 || h.TEID != 0 {
		t.Errorf("response header %+v", h)
	}
	if rec, err := gtpu.ParseRecovery(h.Payload(out[0].Data())); err != nil || rec != 0 {
		t.Errorf("recovery %d, %v", rec, err)
	}
	// Echo responses and end markers are absorbed.
	resp := withHeadroom(gtpu.AppendEchoResponse(nil, 1), peer)
	if out := w.Uplink([]upfu.Packet{resp}, nil); len(out) != 0 {
		t.Errorf("answered an Echo Response")
	}
}

func TestFARDropAndNoPDR(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	p.Install(session(t, sessionOpts{ulFAR: rules.ActionDrop}))
	w := p.NewWorker()
	if out := w.Uplink([]upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 60))}, nil); len(out) != 0 {
		t.Fatalf("dropping FAR forwarded")
	}
	if d := p.Stats().Drops; d["far-drop"] != 1 {
		t.Errorf("drops %v", d)
	}
}

func TestBufferDrainInOrder(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	rep := runReports(t, p)
	snk := &sink{}
	p.SetSink(snk)
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	w := p.NewWorker()
	var sent [][]byte
	for i := range 5 {
		pkt := ipv4UDP(dnIP, ueIP, 53, uint16(1000+i), 60+i)
		sent = append(sent, pkt)
		if out := w.Downlink([]upfu.Packet{withHeadroom(pkt, netipZero)}, nil); len(out) != 0 {
			t.Fatalf("buffering FAR forwarded")
		}
	}
	got := rep.wait(t, 1)
	if len(got) != 1 || got[0].Kind != rules.ReportDownlinkData || got[0].PDRID != 2 || got[0].QFI != qfi {
		t.Fatalf("reports %+v, want one downlink data report for PDR 2", got)
	}
	if st := p.Stats(); st.Buffered != 5 {
		t.Fatalf("buffered %d, want 5", st.Buffered)
	}

	// The SMF switches the FAR to forward to a new tunnel (paging done,
	// or handover to a new gNB): the buffer drains in order there.
	p.Install(session(t, sessionOpts{encapTEID: 0x300}))
	if len(snk.pkts) != 5 {
		t.Fatalf("drained %d packets, want 5", len(snk.pkts))
	}
	for i, o := range snk.pkts {
		var h gtpu.Header
		if err := gtpu.Parse(o.Data(), &h); err != nil {
			t.Fatal(err)
		}
		if h.TEID != 0x300 || o.Peer != gnb || !bytes.Equal(h.Payload(o.Data()), sent[i]) {
			t.Fatalf("drained packet %d: TEID %#x to %v, payload equal %v", i, h.TEID, o.Peer, bytes.Equal(h.Payload(o.Data()), sent[i]))
		}
	}
	if st := p.Stats(); st.Buffered != 0 || st.DLPackets != 5 {
		t.Errorf("after drain: %+v", st)
	}
	// New packets go straight to the new tunnel.
	out := w.Downlink([]upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 53, 2000, 80), netipZero)}, nil)
	if len(out) != 1 {
		t.Fatalf("after drain: %d outputs", len(out))
	}
	// A later buffering episode reports again.
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer | rules.ActionNotifyCP}))
	w.Downlink([]upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 53, 2000, 80), netipZero)}, nil)
	rep.wait(t, 2)
}

func TestBufferBoundedAndRemoveDrops(t *testing.T) {
	p := newPipeline(t, upfu.Config{BufferPackets: 3})
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer}))
	w := p.NewWorker()
	for i := range 5 {
		w.Downlink([]upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 53, uint16(i), 60), netipZero)}, nil)
	}
	st := p.Stats()
	if st.Buffered != 3 || st.Drops["buffer-full"] != 2 {
		t.Fatalf("buffered %d drops %v", st.Buffered, st.Drops)
	}
	p.Remove(seid)
	st = p.Stats()
	if st.Buffered != 0 || st.BufferedBytes != 0 || st.Sessions != 0 || st.Drops["buffer-discarded"] != 3 {
		t.Fatalf("after remove: %+v", st)
	}
	// Gone: uplink gets an Error Indication, downlink no session.
	if out := w.Uplink([]upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 60))}, nil); len(out) != 1 {
		t.Errorf("uplink after remove: %d outputs, want an Error Indication", len(out))
	}
	// Reinstalled with forwarding: nothing stale is drained.
	snk := &sink{}
	p.SetSink(snk)
	p.Install(session(t, sessionOpts{}))
	if len(snk.pkts) != 0 {
		t.Errorf("drained %d packets of a removed session", len(snk.pkts))
	}
}

func TestBufferToDropDiscards(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	snk := &sink{}
	p.SetSink(snk)
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer}))
	w := p.NewWorker()
	w.Downlink([]upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 53, 1, 60), netipZero)}, nil)
	p.Install(session(t, sessionOpts{dlFAR: rules.ActionDrop}))
	if len(snk.pkts) != 0 {
		t.Errorf("sent %d buffered packets under a dropping FAR", len(snk.pkts))
	}
	if st := p.Stats(); st.Buffered != 0 || st.BufferedBytes != 0 || st.Drops["buffer-discarded"] != 1 || st.Drops["far-drop"] != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestQERGate(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	q := &rules.QER{ID: 1, QFI: 5, ULOpen: false, DLOpen: true}
	p.Install(session(t, sessionOpts{qers: []*rules.QER{q}}))
	w := p.NewWorker()
	if out := w.Uplink([]upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 60))}, nil); len(out) != 0 {
		t.Errorf("closed UL gate forwarded")
	}
	out := w.Downlink([]upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 1, 2, 60), netipZero)}, nil)
	if len(out) != 1 {
		t.Fatalf("open DL gate dropped")
	}
	var h gtpu.Header
	if err := gtpu.Parse(out[0].Data(), &h); err != nil || h.QFI != 5 {
		t.Errorf("QFI %d (%v), want the QER's 5", h.QFI, err)
	}
	if d := p.Stats().Drops; d["gate-closed"] != 1 {
		t.Errorf("drops %v", d)
	}
}

func TestQERMBR(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	// 1 byte/s with a 1500-byte burst: the first 1000-byte packet fits,
	// the second cannot until ~500 s have passed.
	q := &rules.QER{ID: 1, ULOpen: true, DLOpen: true, MBRUL: rules.NewTokenBucket(1, 1500), MBRDL: rules.NewTokenBucket(1, 1500)}
	p.Install(session(t, sessionOpts{qers: []*rules.QER{q}}))
	w := p.NewWorker()
	in := []upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 1000)), ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 1000))}
	if out := w.Uplink(in, nil); len(out) != 1 {
		t.Errorf("UL: %d forwarded, want 1", len(out))
	}
	dl := []upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 1, 2, 1000), netipZero), withHeadroom(ipv4UDP(dnIP, ueIP, 1, 2, 1000), netipZero)}
	if out := w.Downlink(dl, nil); len(out) != 1 {
		t.Errorf("DL: %d forwarded, want 1", len(out))
	}
	if d := p.Stats().Drops; d["mbr"] != 2 {
		t.Errorf("drops %v", d)
	}
	// The bucket survives a modification: the next snapshot shares it.
	p.Install(session(t, sessionOpts{qers: []*rules.QER{q}}))
	if out := w.Uplink(in[:1], nil); len(out) != 0 {
		t.Errorf("rate reset by a modification")
	}
}

func TestURRThresholdReportsOnce(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	rep := runReports(t, p)
	u := &rules.URR{ID: 3, Counters: &rules.Counters{}, Threshold: rules.Volume{Total: 250}}
	// A second URR with a higher threshold: its report arrives after any
	// (wrong) repeat of the first.
	u2 := &rules.URR{ID: 4, Counters: &rules.Counters{}, Threshold: rules.Volume{UL: 500}}
	p.Install(session(t, sessionOpts{urrs: []*rules.URR{u, u2}}))
	w := p.NewWorker()
	for range 2 {
		w.Uplink([]upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 100))}, nil)
	}
	w.Downlink([]upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 1, 2, 100), netipZero)}, nil)
	for range 4 {
		w.Uplink([]upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 100))}, nil)
	}
	got := rep.wait(t, 2)
	r := got[0]
	if r.Kind != rules.ReportUsage || r.URRID != 3 || r.PDRID != 2 || r.Volume.Total != 300 || r.Volume.UL != 200 || r.Volume.DL != 100 || r.ULPackets != 2 || r.DLPackets != 1 {
		t.Errorf("first report %+v", r)
	}
	if r := got[1]; r.URRID != 4 || r.Volume.UL != 500 {
		t.Errorf("second report %+v, want URR 4 at 500 UL bytes", r)
	}
	if use := u.Counters.Load(); use.Volume.Total != 700 {
		t.Errorf("counted %d bytes, want 700", use.Volume.Total)
	}
}

// TS 29.244 §5.2.2.2.1: the packet that reaches a volume quota passes and
// raises one VOLQU report; the PDR's packets after it are dropped and
// counted.
func TestURRVolumeQuotaStopsTraffic(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	rep := runReports(t, p)
	u := &rules.URR{ID: 5, Counters: &rules.Counters{}, Quota: rules.Volume{UL: 300}}
	p.Install(session(t, sessionOpts{urrs: []*rules.URR{u}}))
	w := p.NewWorker()
	forwarded := 0
	for range 5 {
		forwarded += len(w.Uplink([]upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 100))}, nil))
	}
	if forwarded != 3 {
		t.Errorf("forwarded %d packets of 100 bytes under a 300-byte quota, want 3", forwarded)
	}
	if r := rep.wait(t, 1)[0]; r.Kind != rules.ReportUsage || r.Usage != rules.UsageVolumeQuota || r.URRID != 5 || r.Volume.UL != 300 {
		t.Errorf("quota report %+v", r)
	}
	if got := p.Stats().Drops[upfu.DropQuota.String()]; got != 2 {
		t.Errorf("quota drops %d, want 2", got)
	}
}

func TestSessionReplacementMovesTEID(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	p.Install(session(t, sessionOpts{}))
	s := session(t, sessionOpts{})
	s.TEIDs = []uint32{0x101}
	p.Install(s)
	w := p.NewWorker()
	out := w.Uplink([]upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 60))}, nil)
	if len(out) != 1 || out[0].Port != upfu.PortN3 {
		t.Errorf("old TEID still routed: %+v", out)
	}
}

// The hot paths allocate nothing per packet.
func TestNoAllocations(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	u := &rules.URR{ID: 3, Counters: &rules.Counters{}}
	q := &rules.QER{ID: 1, ULOpen: true, DLOpen: true, MBRUL: rules.NewTokenBucket(1<<40, 1<<40), MBRDL: rules.NewTokenBucket(1<<40, 1<<40)}
	p.Install(session(t, sessionOpts{qers: []*rules.QER{q}, urrs: []*rules.URR{u}}))
	w := p.NewWorker()
	const batch = 32
	ul := make([]upfu.Packet, batch)
	dl := make([]upfu.Packet, batch)
	for i := range batch {
		ul[i] = ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, uint16(i), 200))
		dl[i] = withHeadroom(ipv4UDP(dnIP, ueIP, uint16(i), 1, 200), netipZero)
	}
	ul[3] = ulPacket(0x999, ipv4UDP(ueIP, dnIP, 1, 2, 60))    // Error Indication
	ul[4] = withHeadroom(gtpu.AppendEchoRequest(nil, 9), gnb) // Echo Response
	out := make([]upfu.Packet, 0, batch)
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"uplink", func() { out = w.Uplink(ul, out[:0]) }},
		{"downlink", func() { out = w.Downlink(dl, out[:0]) }},
	} {
		if a := testing.AllocsPerRun(50, tc.fn); a != 0 {
			t.Errorf("%s: %v allocations per batch", tc.name, a)
		}
	}
	if len(out) != batch {
		t.Errorf("downlink forwarded %d of %d", len(out), batch)
	}
}

func benchPipeline(b *testing.B, size int, uplink bool) {
	p := newPipeline(b, upfu.Config{})
	u := &rules.URR{ID: 3, Counters: &rules.Counters{}}
	q := &rules.QER{ID: 1, ULOpen: true, DLOpen: true}
	p.Install(session(b, sessionOpts{qers: []*rules.QER{q}, urrs: []*rules.URR{u}}))
	w := p.NewWorker()
	const batch = 32
	in := make([]upfu.Packet, batch)
	for i := range batch {
		if uplink {
			in[i] = ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, uint16(i), size))
		} else {
			in[i] = withHeadroom(ipv4UDP(dnIP, ueIP, uint16(i), 1, size), netipZero)
		}
	}
	out := make([]upfu.Packet, 0, batch)
	b.SetBytes(int64(size * batch))
	b.ReportAllocs()
	for b.Loop() {
		if uplink {
			out = w.Uplink(in, out[:0])
		} else {
			out = w.Downlink(in, out[:0])
		}
	}
	if len(out) != batch {
		b.Fatalf("forwarded %d of %d", len(out), batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/pkt")
}

func BenchmarkUplink(b *testing.B) {
	for _, size := range []int{64, 1400} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) { benchPipeline(b, size, true) })
	}
}

func BenchmarkDownlink(b *testing.B) {
	for _, size := range []int{64, 1400} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) { benchPipeline(b, size, false) })
	}
}

// Workers keep processing while sessions are installed, modified and
// removed (run with -race): lookups take no locks and see whole snapshots.
func TestConcurrentInstall(t *testing.T) {
	p := newPipeline(t, upfu.Config{})
	snk := &sink{}
	p.SetSink(snk)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p.NewWorker()
			ul := []upfu.Packet{ulPacket(ulTEID, ipv4UDP(ueIP, dnIP, 1, 2, 100))}
			out := make([]upfu.Packet, 0, 4)
			for {
				select {
				case <-done:
					return
				default:
				}
				out = w.Uplink(ul, out[:0])
				dl := []upfu.Packet{withHeadroom(ipv4UDP(dnIP, ueIP, 1, 2, 100), netipZero)}
				out = w.Downlink(dl, out[:0])
			}
		}()
	}
	for i := range 300 {
		switch i % 3 {
		case 0:
			p.Install(session(t, sessionOpts{}))
		case 1:
			p.Install(session(t, sessionOpts{dlFAR: rules.ActionBuffer}))
		case 2:
			p.Remove(seid)
		}
	}
	close(done)
	wg.Wait()
	// Buffers of removed sessions refuse late pushes: the global account
	// is back to zero.
	if st := p.Stats(); st.Sessions != 0 || st.Buffered != 0 || st.BufferedBytes != 0 {
		t.Errorf("after removal: %+v", st)
	}
}
