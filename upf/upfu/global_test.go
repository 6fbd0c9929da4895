package upfu_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

// mixedSession is a session of several PDRs each way, over one or two
// TEIDs: defaults, SDF PDRs by port and protocol (some without TEID,
// some on one TEID only), PDRs on QFI, and equal precedences. Every FAR
// re-encapsulates with a TEID naming its PDR, so the output tells which
// PDR classified the packet; some drop. The per-session classifiers are
// left nil when global: that pipeline must classify on the rule lists.
func mixedSession(t testing.TB, r *rand.Rand, sessID uint64, teids []uint32, ue netip.Addr, global bool) *rules.Session {
	t.Helper()
	s := &rules.Session{SEID: sessID, CPSEID: sessID, UEIPv4: ue, TEIDs: teids}
	var up, down []classify.Rule
	add := func(src rules.Interface, prec uint32, rule classify.Rule) {
		idx := uint32(len(s.PDRs))
		far := &rules.FAR{ID: idx + 1, Action: rules.ActionForward, Dest: rules.InterfaceAccess,
			Encap: &rules.Encap{TEID: uint32(sessID)<<8 | idx, Peer: gnb, QFI: 1}}
		if r.IntN(5) == 0 {
			far.Action = rules.ActionDrop
		}
		s.PDRs = append(s.PDRs, &rules.PDR{ID: uint16(idx + 1), Precedence: prec, Source: src, FAR: far})
		rule.ID, rule.Precedence = idx, prec
		rule.Has |= classify.FieldSourceInterface
		rule.SourceInterface = uint8(src)
		if src == rules.InterfaceAccess {
			up = append(up, rule)
		} else {
			down = append(down, rule)
		}
	}
	port := func() classify.PortRange {
		p := uint16(1000 + r.IntN(4))
		return classify.PortRange{Lo: p, Hi: p + uint16(r.IntN(2))}
	}
	for range 1 + r.IntN(4) {
		prec := uint32(10 + r.IntN(5)) // ties happen
		ul := classify.Rule{Has: classify.FieldDstPort | classify.FieldProto, DstPort: port(), Proto: 17}
		switch r.IntN(3) {
		case 0:
			ul.Has |= classify.FieldTEID
			ul.TEID = teids[r.IntN(len(teids))]
		case 1:
			ul.Has |= classify.FieldQFI
			ul.QFI = uint8(1 + r.IntN(2))
		}
		add(rules.InterfaceAccess, prec, ul)
		add(rules.InterfaceCore, prec, classify.Rule{Has: classify.FieldSrcPort | classify.FieldProto, SrcPort: port(), Proto: 17,
			UEIP: classify.PrefixFromNetip(netip.PrefixFrom(ue, 32))})
	}
	add(rules.InterfaceAccess, 255, classify.Rule{Has: classify.FieldTEID, TEID: teids[0]})
	add(rules.InterfaceCore, 255, classify.Rule{UEIP: classify.PrefixFromNetip(netip.PrefixFrom(ue, 32))})
	s.UplinkRules, s.DownlinkRules = up, down
	if !global {
		var err error
		if s.Uplink, err = classify.ForTable(up, classify.Hints{}); err != nil {
			t.Fatal(err)
		}
		if s.Downlink, err = classify.ForTable(down, classify.Hints{}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// outcome is what the pipeline did with one packet: its outputs and the
// drops it counted.
func outcome(p *upfu.Pipeline, w *upfu.Worker, uplink bool, pkt []byte, peer netip.AddrPort) string {
	in := []upfu.Packet{withHeadroom(pkt, peer)}
	before := p.Stats().Drops
	var out []upfu.Packet
	if uplink {
		out = w.Uplink(in, nil)
	} else {
		out = w.Downlink(in, nil)
	}
	var b bytes.Buffer
	for _, o := range out {
		fmt.Fprintf(&b, "port %d peer %v % x; ", o.Port, o.Peer, o.Data())
	}
	for k, v := range p.Stats().Drops {
		if v != before[k] {
			fmt.Fprintf(&b, "drop %s; ", k)
		}
	}
	return b.String()
}

// The global table gives every packet the outcome the per-session tables
// give, through installs, modifications (the TEIDs change), TEID and UE
// address takeovers, and removals.
func TestGlobalTableMatchesSessionTables(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// Error Indications unlimited: the limiter's refill depends on timing.
	per := newPipeline(t, upfu.Config{ErrorIndicationRate: 1 << 30})
	glob := newPipeline(t, upfu.Config{ErrorIndicationRate: 1 << 30, GlobalPDRTable: true})
	pw, gw := per.NewWorker(), glob.NewWorker()
	const sessions = 24
	ueOf := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 60, 0, byte(1 + i)}) }
	install := func(i int) {
		teids := []uint32{uint32(0x1000 + r.IntN(3*sessions))}
		if r.IntN(2) == 0 {
			teids = append(teids, uint32(0x1000+r.IntN(3*sessions)))
			if teids[1] == teids[0] {
				teids = teids[:1]
			}
		}
		ue := ueOf(i)
		if r.IntN(8) == 0 {
			ue = ueOf(r.IntN(sessions)) // takes another session's address over
		}
		seed := r.Uint64()
		per.Install(mixedSession(t, rand.New(rand.NewPCG(seed, 0)), uint64(1+i), teids, ue, false))
		glob.Install(mixedSession(t, rand.New(rand.NewPCG(seed, 0)), uint64(1+i), teids, ue, true))
	}
	for i := range sessions {
		install(i)
	}
	servers := []netip.Addr{netip.MustParseAddr("10.100.6.2"), netip.MustParseAddr("8.8.8.8")}
	compared, forwarded := 0, 0
	for round := range 30 {
		for range 200 {
			uplink := r.IntN(2) == 0
			ue := ueOf(r.IntN(sessions + 2)) // a few unknown addresses
			srv := servers[r.IntN(len(servers))]
			sp, dp := uint16(1000+r.IntN(5)), uint16(1000+r.IntN(5))
			var pkt []byte
			if uplink {
				teid := uint32(0x1000 + r.IntN(3*sessions+4))
				pkt = gtpu.AppendGPDU(nil, teid, uint8(1+r.IntN(3)), false, ipv4UDP(ue, srv, sp, dp, 60))
			} else {
				pkt = ipv4UDP(srv, ue, sp, dp, 60)
			}
			a := outcome(per, pw, uplink, pkt, gnb)
			b := outcome(glob, gw, uplink, pkt, gnb)
			if a != b {
				t.Fatalf("round %d, uplink %v, packet % x:\nper-session: %s\nglobal:      %s", round, uplink, pkt, a, b)
			}
			compared++
			if bytes.Contains([]byte(a), []byte("port")) {
				forwarded++
			}
		}
		// Change some sessions: modify (new rules and TEIDs), remove, or
		// bring back.
		for range 4 {
			i := r.IntN(sessions)
			if r.IntN(4) == 0 {
				per.Remove(uint64(1 + i))
				glob.Remove(uint64(1 + i))
			} else {
				install(i)
			}
		}
	}
	if forwarded < compared/4 {
		t.Errorf("only %d of %d packets forwarded: the comparison says little", forwarded, compared)
	}
}

// Lookups on the global table run while sessions are modified and
// removed (run with -race): a packet of a session that stays installed
// always finds one of its PDRs.
func TestGlobalTableConcurrentInstall(t *testing.T) {
	p := newPipeline(t, upfu.Config{GlobalPDRTable: true})
	r := rand.New(rand.NewPCG(3, 4))
	stable := mixedSession(t, r, 1, []uint32{0x500}, netip.MustParseAddr("10.60.1.1"), true)
	p.Install(stable)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 2000 {
			p.Install(mixedSession(t, r, 2, []uint32{uint32(0x600 + i%7)}, netip.MustParseAddr("10.60.1.2"), true))
			if i%3 == 0 {
				p.Remove(2)
			}
			if i%5 == 0 {
				p.Install(stable) // a modification that changes nothing
			}
		}
		close(done)
	}()
	w := p.NewWorker()
	pkt := ipv4UDP(dnIP, netip.MustParseAddr("10.60.1.1"), 7, 7, 60)
	ul := gtpu.AppendGPDU(nil, 0x500, 1, false, ipv4UDP(netip.MustParseAddr("10.60.1.1"), dnIP, 7, 7, 60))
	n := 0
	for {
		select {
		case <-done:
			wg.Wait()
			if st := p.Stats(); st.Drops["no-pdr"] != 0 || st.Drops["no-session"] != 0 || st.Drops["unknown-teid"] != 0 {
				t.Errorf("after %d rounds: %+v", n, st.Drops)
			}
			return
		default:
		}
		w.Downlink([]upfu.Packet{withHeadroom(pkt, netipZero)}, nil)
		w.Uplink([]upfu.Packet{withHeadroom(ul, gnb)}, nil)
		n++
	}
}

// A modification withdraws the old snapshot's TEIDs and UE address only
// where they still lead to it: a key another session took over stays
// with that session (both modes).
func TestModificationLeavesTakenOverKeys(t *testing.T) {
	for _, global := range []bool{false, true} {
		t.Run(fmt.Sprintf("global=%v", global), func(t *testing.T) {
			p := newPipeline(t, upfu.Config{GlobalPDRTable: global})
			r := rand.New(rand.NewPCG(5, 6))
			a, b := netip.MustParseAddr("10.60.2.1"), netip.MustParseAddr("10.60.2.2")
			p.Install(mixedSession(t, r, 1, []uint32{0x700}, a, global))
			p.Install(mixedSession(t, r, 2, []uint32{0x700}, a, global)) // takes TEID and address over
			p.Install(mixedSession(t, r, 1, []uint32{0x701}, b, global)) // session 1 moves on
			w := p.NewWorker()
			ul := gtpu.AppendGPDU(nil, 0x700, 1, false, ipv4UDP(a, dnIP, 7, 7, 60))
			dl := ipv4UDP(dnIP, a, 7, 7, 60)
			w.Uplink([]upfu.Packet{withHeadroom(ul, gnb)}, nil)
			w.Downlink([]upfu.Packet{withHeadroom(dl, netipZero)}, nil)
			st := p.Stats()
			if got := st.ULPackets + st.DLPackets + st.Drops["far-drop"]; got != 2 {
				t.Errorf("session 2 lost its keys: %+v", st)
			}
		})
	}
}

// BenchmarkPDRTable compares the per-session tables with the UPF-wide
// table on the whole pipeline, packets spread over many sessions.
func BenchmarkPDRTable(b *testing.B) {
	for _, n := range []int{1, 1000, 20000} {
		for _, global := range []bool{false, true} {
			mode := "session"
			if global {
				mode = "global"
			}
			b.Run(fmt.Sprintf("%d/%s", n, mode), func(b *testing.B) {
				p := newPipeline(b, upfu.Config{GlobalPDRTable: global})
				r := rand.New(rand.NewPCG(7, 8))
				ue := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 60 + byte(i>>16), byte(i >> 8), byte(i)}) }
				for i := range n {
					p.Install(mixedSession(b, r, uint64(1+i), []uint32{uint32(0x10000 + i)}, ue(i), global))
				}
				w := p.NewWorker()
				const batch = 32
				var ul, dl [256][]upfu.Packet
				var orig [256][][]byte // uplink re-encapsulation rewrites the outer header: restored each run
				for k := range ul {
					for range batch {
						i := r.IntN(n)
						sp, dp := uint16(1000+r.IntN(5)), uint16(1000+r.IntN(5))
						pk := withHeadroom(gtpu.AppendGPDU(nil, uint32(0x10000+i), 1, false, ipv4UDP(ue(i), dnIP, sp, dp, 64)), gnb)
						ul[k] = append(ul[k], pk)
						orig[k] = append(orig[k], bytes.Clone(pk.Buf))
						dl[k] = append(dl[k], withHeadroom(ipv4UDP(dnIP, ue(i), sp, dp, 64), netipZero))
					}
				}
				out := make([]upfu.Packet, 0, batch)
				k := 0
				for b.Loop() {
					for j, pk := range ul[k%len(ul)] {
						copy(pk.Buf, orig[k%len(ul)][j])
					}
					out = w.Uplink(ul[k%len(ul)], out[:0])
					out = w.Downlink(dl[k%len(dl)], out[:0])
					k++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*batch), "ns/pkt")
				st := p.Stats()
				if d := st.Drops["unknown-teid"] + st.Drops["no-session"] + st.Drops["no-pdr"]; d != 0 {
					b.Fatalf("%d packets found no session or PDR", d)
				}
			})
		}
	}
}
