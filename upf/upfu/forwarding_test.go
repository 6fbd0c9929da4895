package upfu_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfu"
)

// withForwarding adds to s an indirect data forwarding PDR (TS 23.502
// §4.9.1.3.2-3): from the access on its own TEID, no UE IP address, its FAR
// re-encapsulating to the target NG-RAN's DL forwarding tunnel.
func withForwarding(t testing.TB, s *rules.Session, teid uint32, target netip.AddrPort, targetTEID uint32) *rules.Session {
	t.Helper()
	n := *s
	fwd := &rules.PDR{ID: 3, Precedence: 100, Source: rules.InterfaceAccess, RemoveOuterHeader: true,
		FAR: &rules.FAR{ID: 3, Action: rules.ActionForward, Dest: rules.InterfaceAccess,
			Encap: &rules.Encap{TEID: targetTEID, Peer: target}}}
	n.PDRs = append(append([]*rules.PDR(nil), s.PDRs...), fwd)
	n.TEIDs = append(append([]uint32(nil), s.TEIDs...), teid)
	n.UplinkRules = append(append([]classify.Rule(nil), s.UplinkRules...), classify.Rule{ID: uint32(len(n.PDRs) - 1), Precedence: 100,
		Has: classify.FieldSourceInterface | classify.FieldTEID, SourceInterface: 0, TEID: teid})
	ul, err := classify.NewLinear(n.UplinkRules)
	if err != nil {
		t.Fatal(err)
	}
	n.Uplink = ul
	return &n
}

func TestIndirectForwarding(t *testing.T) {
	for _, global := range []bool{false, true} {
		name := "session"
		if global {
			name = "global"
		}
		t.Run(name, func(t *testing.T) { testIndirectForwarding(t, global) })
	}
}

func testIndirectForwarding(t *testing.T, global bool) {
	const fwdTEID, targetTEID = 0x150, 0xf00d
	target := netip.MustParseAddrPort("10.100.3.9:2152")
	p := newPipeline(t, upfu.Config{GlobalPDRTable: global})
	p.Install(withForwarding(t, session(t, sessionOpts{}), fwdTEID, target, targetTEID))
	w := p.NewWorker()

	// The source gNB forwards a downlink packet (DN -> UE) it had not
	// delivered; its QFI is kept.
	inner := ipv4UDP(dnIP, ueIP, 53, 1000, 300)
	out := w.Uplink([]upfu.Packet{withHeadroom(gtpu.AppendGPDU(nil, fwdTEID, qfi, true, inner), gnb)}, nil)
	if len(out) != 1 {
		t.Fatalf("outputs %d; stats %+v", len(out), p.Stats())
	}
	o := out[0]
	var h gtpu.Header
	if err := gtpu.Parse(o.Data(), &h); err != nil {
		t.Fatal(err)
	}
	if o.Peer != target || o.Port != upfu.PortN3 || h.Type != gtpu.TypeGPDU || h.TEID != targetTEID ||
		!h.HasPDUSessionContainer || h.PDUType != gtpu.PDUTypeDL || h.QFI != qfi {
		t.Errorf("re-encapsulated to %v port %d: %+v", o.Peer, o.Port, h)
	}
	if !bytes.Equal(h.Payload(o.Data()), inner) {
		t.Error("payload changed")
	}
	// The session's own uplink still reaches N6, and its downlink the gNB.
	up := ipv4UDP(ueIP, dnIP, 1000, 53, 100)
	if out := w.Uplink([]upfu.Packet{ulPacket(ulTEID, up)}, nil); len(out) != 1 || out[0].Port != 0 || !bytes.Equal(out[0].Data(), up) {
		t.Errorf("uplink: %+v", out)
	}
	if out := w.Downlink([]upfu.Packet{dlPacket(ueIP, 1, 100)}, nil); len(out) != 1 || out[0].Peer != gnb {
		t.Errorf("downlink: %+v", out)
	}
	if st := p.Stats(); st.DLPackets != 2 || st.ULPackets != 1 || len(st.Drops) != 0 {
		t.Errorf("stats %+v", st)
	}

	// The source passes on the old path's End Marker after the last
	// forwarded packet (TS 23.502 §4.9.1.3.3): it follows that packet to
	// the target's forwarding tunnel in the same batch. An End Marker on
	// the session's own uplink tunnel ends there.
	fwd := withHeadroom(gtpu.AppendGPDU(nil, fwdTEID, qfi, true, inner), gnb)
	em := upfu.Packet{Buf: gtpu.AppendEndMarker(nil, fwdTEID), Peer: gnb}
	em.Len = len(em.Buf)
	ulEM := upfu.Packet{Buf: gtpu.AppendEndMarker(nil, ulTEID), Peer: gnb}
	ulEM.Len = len(ulEM.Buf)
	out = w.Uplink([]upfu.Packet{fwd, em, ulEM}, nil)
	if len(out) != 2 {
		t.Fatalf("forwarded packet and End Marker: %d outputs", len(out))
	}
	if err := gtpu.Parse(out[0].Data(), &h); err != nil || h.Type != gtpu.TypeGPDU || h.TEID != targetTEID {
		t.Errorf("first out: %+v %v", h, err)
	}
	if teid, err := gtpu.ParseEndMarker(out[1].Data()); err != nil || teid != targetTEID || out[1].Peer != target || out[1].Port != upfu.PortN3 {
		t.Errorf("relayed End Marker: TEID %#x to %v port %d, %v", teid, out[1].Peer, out[1].Port, err)
	}
	if st := p.Stats(); st.EndMarkers != 2 || st.EndMarkersRelayed != 1 {
		t.Errorf("End Markers received %d, relayed %d", st.EndMarkers, st.EndMarkersRelayed)
	}

	// Handover done: the SMF removes the forwarding PDR; its TEID is
	// unknown again (Error Indication, TS 29.281 §7.3.1).
	p.Install(session(t, sessionOpts{}))
	out = w.Uplink([]upfu.Packet{withHeadroom(gtpu.AppendGPDU(nil, fwdTEID, qfi, true, inner), gnb)}, nil)
	if len(out) != 1 {
		t.Fatalf("after removal: %d outputs", len(out))
	}
	if ei, err := gtpu.ParseErrorIndication(out[0].Data()); err != nil || ei.TEID != fwdTEID {
		t.Errorf("after removal: %v %v", ei, err)
	}
}
