package upfu_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

var (
	ueIP    = netip.MustParseAddr("10.60.0.1")
	dnIP    = netip.MustParseAddr("10.100.6.2")
	n3Addr  = netip.MustParseAddr("10.100.3.2")
	gnb     = netip.MustParseAddrPort("10.100.3.1:2152")
	ulTEID  = uint32(0x100)
	dlTEID  = uint32(0x200)
	qfi     = uint8(9)
	seid    = uint64(42)
	netInst = []string{"internet", "ims"}
)

// ipv4UDP builds an IPv4/UDP packet of total length size (>= 28).
func ipv4UDP(src, dst netip.Addr, sport, dport uint16, size int) []byte {
	payload := make([]byte, size-ipv4pkt.HeaderLen-8)
	for i := range payload {
		payload[i] = byte(i)
	}
	return ipv4pkt.AppendUDP(nil, src, dst, sport, dport, payload)
}

// withHeadroom returns an input packet holding data after upfu.Headroom bytes.
func withHeadroom(data []byte, peer netip.AddrPort) upfu.Packet {
	buf := make([]byte, upfu.Headroom+len(data))
	copy(buf[upfu.Headroom:], data)
	return upfu.Packet{Buf: buf, Off: upfu.Headroom, Len: len(data), Peer: peer}
}

func ulPacket(teid uint32, inner []byte) upfu.Packet {
	return withHeadroom(gtpu.AppendGPDU(nil, teid, qfi, false, inner), gnb)
}

type sessionOpts struct {
	ulFAR, dlFAR rules.Action
	encapTEID    uint32
	qers         []*rules.QER
	urrs         []*rules.URR
	netInst      string
	bufPackets   int // rules.Session.BufferPackets (a BAR's count)
	// Another session than the default one (seid, ueIP, ulTEID).
	seid   uint64
	ue     netip.Addr
	ulTEID uint32
	// The DL FAR's tunnel peer (default gnb), and SNDEM in this snapshot.
	peer  netip.AddrPort
	sndem bool
}

// session builds a two-PDR session: uplink by TEID, downlink by UE IP.
func session(t testing.TB, o sessionOpts) *rules.Session {
	t.Helper()
	if o.ulFAR == 0 {
		o.ulFAR = rules.ActionForward
	}
	if o.dlFAR == 0 {
		o.dlFAR = rules.ActionForward
	}
	if o.encapTEID == 0 {
		o.encapTEID = dlTEID
	}
	if o.netInst == "" {
		o.netInst = "internet"
	}
	if o.seid == 0 {
		o.seid = seid
	}
	if !o.ue.IsValid() {
		o.ue = ueIP
	}
	if o.ulTEID == 0 {
		o.ulTEID = ulTEID
	}
	if !o.peer.IsValid() {
		o.peer = gnb
	}
	ul := &rules.PDR{ID: 1, Precedence: 100, Source: rules.InterfaceAccess, RemoveOuterHeader: true,
		FAR:  &rules.FAR{ID: 1, Action: o.ulFAR, Dest: rules.InterfaceCore, NetworkInstance: o.netInst},
		QERs: o.qers, URRs: o.urrs}
	dl := &rules.PDR{ID: 2, Precedence: 100, Source: rules.InterfaceCore,
		FAR: &rules.FAR{ID: 2, Action: o.dlFAR, Dest: rules.InterfaceAccess,
			Encap: &rules.Encap{TEID: o.encapTEID, Peer: o.peer, QFI: qfi}, SendEndMarker: o.sndem},
		QERs: o.qers, URRs: o.urrs}
	ulr := []classify.Rule{{ID: 0, Precedence: 100,
		Has: classify.FieldSourceInterface | classify.FieldTEID, SourceInterface: 0, TEID: o.ulTEID}}
	dlr := []classify.Rule{{ID: 1, Precedence: 100,
		Has: classify.FieldSourceInterface, SourceInterface: 1, UEIP: classify.PrefixFromNetip(netip.PrefixFrom(o.ue, 32))}}
	ulc, err := classify.NewLinear(ulr)
	if err != nil {
		t.Fatal(err)
	}
	dlc, err := classify.NewLinear(dlr)
	if err != nil {
		t.Fatal(err)
	}
	return &rules.Session{SEID: o.seid, CPSEID: 7, UEIPv4: o.ue, TEIDs: []uint32{o.ulTEID},
		PDRs: []*rules.PDR{ul, dl}, Uplink: ulc, Downlink: dlc, UplinkRules: ulr, DownlinkRules: dlr, BufferPackets: o.bufPackets}
}

func newPipeline(t testing.TB, cfg upfu.Config) *upfu.Pipeline {
	t.Helper()
	cfg.N3Addr = n3Addr
	cfg.NetworkInstances = netInst
	p, err := upfu.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// reports collects what the pipeline reports.
type reports struct {
	mu  sync.Mutex
	got []rules.Report
	ch  chan struct{}
}

func (r *reports) Report(seid uint64, rep rules.Report) {
	r.mu.Lock()
	r.got = append(r.got, rep)
	r.mu.Unlock()
	r.ch <- struct{}{}
}

func runReports(t *testing.T, p *upfu.Pipeline) *reports {
	r := &reports{ch: make(chan struct{}, 100)}
	p.SetReporter(r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *reports) wait(t *testing.T, n int) []rules.Report {
	t.Helper()
	for {
		r.mu.Lock()
		got := append([]rules.Report(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d reports, want %d", len(got), n)
		}
	}
}

// sink collects drained packets (copies).
type sink struct {
	mu   sync.Mutex
	pkts []upfu.Packet
}

func (s *sink) Send(pkts []upfu.Packet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pkts {
		d := append([]byte(nil), p.Data()...)
		s.pkts = append(s.pkts, upfu.Packet{Buf: d, Len: len(d), Peer: p.Peer, Port: p.Port})
	}
}

var netipZero netip.AddrPort

func mustAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
