// Package workload generates 5G PDR tables and matching packet traces for
// the classifier benchmarks and tests: per-session tables in the L25GC
// setting (TEID, UE IP, QFI and SDF filters), a home-gateway session with
// hundreds of firewall/NAT-like SDF rules, and one table holding the PDRs
// of many sessions.
package workload

import (
	"math/rand/v2"

	"github.com/tern5g/tern/classify"
)

// Workload is a rule table and a trace of headers to classify.
type Workload struct {
	Name  string
	Rules []classify.Rule
	Trace []classify.Header
}

// Source interface values (TS 29.244 §8.2.2).
const (
	Access uint8 = 0 // uplink, from the gNB over N3
	Core   uint8 = 1 // downlink, from the data network over N6
)

type gen struct {
	r      *rand.Rand
	nextID uint32
}

func (g *gen) id() uint32 { g.nextID++; return g.nextID - 1 }

// server is a remote (data network) prefix; a few are IPv6.
func (g *gen) server() classify.Prefix {
	if g.r.IntN(8) == 0 {
		a := classify.Addr{Hi: 0x2001_0db8_0000_0000 | uint64(g.r.IntN(1<<16))<<16, Lo: g.r.Uint64()}
		return classify.Prefix{Addr: a, Len: uint8([]int{48, 64, 128}[g.r.IntN(3)])}.Masked()
	}
	return classify.PrefixFrom4(g.r.Uint32(), []int{8, 16, 20, 24, 28, 32}[g.r.IntN(6)])
}

func (g *gen) ports() classify.PortRange {
	switch g.r.IntN(4) {
	case 0:
		lo := uint16(1024 + g.r.IntN(30000))
		return classify.PortRange{Lo: lo, Hi: lo + uint16(g.r.IntN(100))}
	default:
		p := []uint16{53, 80, 443, 554, 1935, 3478, 5060, 8080, 8443, 27015}[g.r.IntN(10)]
		return classify.PortRange{Lo: p, Hi: p}
	}
}

// session appends the PDRs of one PDU session: an uplink and a downlink
// default PDR (TEID, UE IP; lowest precedence), and sdf pairs of uplink and
// downlink SDF PDRs steering flows to other QoS flows.
func (g *gen) session(rules []classify.Rule, teid uint32, ue classify.Addr, sdf int) []classify.Rule {
	uePfx := classify.Prefix{Addr: ue, Len: 128}
	for i := 0; i < sdf; i++ {
		srv, dp := g.server(), g.ports()
		proto := []uint8{6, 17}[g.r.IntN(2)]
		qfi := uint8(1 + g.r.IntN(8))
		prec := uint32(10 + g.r.IntN(200))
		ul := classify.Rule{
			ID: g.id(), Precedence: prec,
			Has:             classify.FieldSourceInterface | classify.FieldTEID | classify.FieldQFI | classify.FieldDstPort | classify.FieldProto,
			SourceInterface: Access, TEID: teid, QFI: qfi, UEIP: uePfx,
			SrcIP: uePfx, DstIP: srv, DstPort: dp, Proto: proto,
		}
		dl := classify.Rule{
			ID: g.id(), Precedence: prec,
			Has:             classify.FieldSourceInterface | classify.FieldSrcPort | classify.FieldProto,
			SourceInterface: Core, UEIP: uePfx,
			SrcIP: srv, DstIP: uePfx, SrcPort: dp, Proto: proto,
		}
		if g.r.IntN(4) == 0 { // DSCP-marked flows
			dl.Has |= classify.FieldToS
			dl.ToS, dl.ToSMask = uint8(g.r.IntN(64))<<2, 0xfc
		}
		rules = append(rules, ul, dl)
	}
	rules = append(rules,
		classify.Rule{ID: g.id(), Precedence: 255, Has: classify.FieldSourceInterface | classify.FieldTEID,
			SourceInterface: Access, TEID: teid, UEIP: uePfx},
		classify.Rule{ID: g.id(), Precedence: 255, Has: classify.FieldSourceInterface,
			SourceInterface: Core, UEIP: uePfx},
	)
	return rules
}

// headerFor draws a packet the rule matches, filling the fields a UPF
// would parse: outer TEID and QFI on uplink, inner 5-tuple, UE IP.
func (g *gen) headerFor(r *classify.Rule) classify.Header {
	h := classify.Header{
		SrcIP: g.inside(r.SrcIP), DstIP: g.inside(r.DstIP), UEIP: r.UEIP.Addr,
		SrcPort: g.inRange(r.Has&classify.FieldSrcPort != 0, r.SrcPort),
		DstPort: g.inRange(r.Has&classify.FieldDstPort != 0, r.DstPort),
		Proto:   []uint8{6, 17}[g.r.IntN(2)], SourceInterface: r.SourceInterface,
		TEID: r.TEID, QFI: r.QFI,
	}
	if r.Has&classify.FieldProto != 0 {
		h.Proto = r.Proto
	}
	if r.Has&classify.FieldToS != 0 {
		h.ToS = r.ToS
	}
	return h
}

func (g *gen) inside(p classify.Prefix) classify.Addr {
	if p.Len == 0 {
		return classify.AddrFrom4(g.r.Uint32())
	}
	hi, lo := ^uint64(0)<<(64-uint(min(p.Len, 64))), ^uint64(0)<<(128-uint(max(p.Len, 64)))
	return classify.Addr{Hi: p.Addr.Hi | g.r.Uint64()&^hi, Lo: p.Addr.Lo | g.r.Uint64()&^lo}
}

func (g *gen) inRange(on bool, p classify.PortRange) uint16 {
	if !on {
		return uint16(g.r.IntN(65536))
	}
	return p.Lo + uint16(g.r.IntN(int(p.Hi-p.Lo)+1))
}

func (g *gen) trace(rules []classify.Rule, n int) []classify.Header {
	out := make([]classify.Header, n)
	for i := range out {
		out[i] = g.headerFor(&rules[g.r.IntN(len(rules))])
	}
	return out
}

// Session is one PDU session's table of n PDRs (n >= 2, even): the two
// default PDRs plus (n-2)/2 uplink/downlink SDF pairs, as in L25GC's
// per-session evaluation.
func Session(n int, seed uint64) Workload {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x5e55))}
	ue := classify.AddrFrom4(0x0a3c0000 | g.r.Uint32()&0xffff)
	rules := g.session(nil, 0x1000+g.r.Uint32()&0xffff, ue, max(n-2, 0)/2)
	return Workload{Name: sizeName("session", len(rules)), Rules: rules, Trace: g.trace(rules, 100_000)}
}

// HomeGateway is one session carrying a home network behind a 5G
// residential gateway: n firewall/NAT-like SDF rules (pinholes to LAN
// hosts and ports, blocked services, DSCP classes) above the defaults.
func HomeGateway(n int, seed uint64) Workload {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x4a7e))}
	ue := classify.AddrFrom4(0x0a3d0001)
	teid := uint32(0x2000)
	var rules []classify.Rule
	lan := func() classify.Prefix { return classify.PrefixFrom4(0xc0a80000|uint32(g.r.IntN(256)), 32) }
	for len(rules) < n-2 {
		prec := uint32(len(rules) + 1)
		switch g.r.IntN(4) {
		case 0: // port forward: downlink to a LAN host's service
			p := g.ports()
			rules = append(rules, classify.Rule{ID: g.id(), Precedence: prec,
				Has:             classify.FieldSourceInterface | classify.FieldDstPort | classify.FieldProto,
				SourceInterface: Core, UEIP: classify.Prefix{Addr: ue, Len: 128}, DstIP: classify.Prefix{Addr: ue, Len: 128},
				DstPort: p, Proto: []uint8{6, 17}[g.r.IntN(2)]})
		case 1: // block: uplink from a LAN host to a remote network
			rules = append(rules, classify.Rule{ID: g.id(), Precedence: prec,
				Has:             classify.FieldSourceInterface | classify.FieldTEID | classify.FieldProto,
				SourceInterface: Access, TEID: teid, SrcIP: lan(), DstIP: g.server(), Proto: []uint8{6, 17}[g.r.IntN(2)]})
		case 2: // QoS class by remote service
			rules = append(rules, classify.Rule{ID: g.id(), Precedence: prec,
				Has:             classify.FieldSourceInterface | classify.FieldTEID | classify.FieldDstPort,
				SourceInterface: Access, TEID: teid, DstIP: g.server(), DstPort: g.ports()})
		default: // DSCP-marked downlink
			rules = append(rules, classify.Rule{ID: g.id(), Precedence: prec,
				Has:             classify.FieldSourceInterface | classify.FieldToS | classify.FieldSrcPort,
				SourceInterface: Core, UEIP: classify.Prefix{Addr: ue, Len: 128}, SrcIP: g.server(),
				SrcPort: g.ports(), ToS: uint8(g.r.IntN(64)) << 2, ToSMask: 0xfc})
		}
	}
	rules = g.session(rules, teid, ue, 0)
	return Workload{Name: sizeName("homegw", len(rules)), Rules: rules, Trace: g.trace(rules, 100_000)}
}

// Sessions is one UPF-wide table holding the PDRs of n sessions: every
// session has its two defaults and every fourth one an SDF pair.
func Sessions(n int, seed uint64) Workload {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x6106))}
	var rules []classify.Rule
	for i := 0; i < n; i++ {
		ue := classify.AddrFrom4(0x0a000000 + uint32(i))
		if i%8 == 7 {
			ue = classify.Addr{Hi: 0x2001_0db8_ff00_0000, Lo: uint64(i)}
		}
		sdf := 0
		if i%4 == 0 {
			sdf = 1
		}
		rules = g.session(rules, 0x10000+uint32(i), ue, sdf)
	}
	return Workload{Name: sizeName("sessions", n), Rules: rules, Trace: g.trace(rules, 1_000_000)}
}

func sizeName(kind string, n int) string {
	switch {
	case n >= 1000 && n%1000 == 0:
		return kind + "_" + itoa(n/1000) + "k"
	}
	return kind + "_" + itoa(n)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
