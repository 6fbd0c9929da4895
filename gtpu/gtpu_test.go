package gtpu_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/tern5g/tern/gtpu"
	gogtpie "github.com/wmnsk/go-gtp/gtpv1/ie"
	gogtp "github.com/wmnsk/go-gtp/gtpv1/message"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A DL G-PDU as a gNB receives it on N3 (TS 29.281 §5.1 flags E=1, TS
// 38.415 §5.5.2.1 DL PDU SESSION INFORMATION, QFI 9), written out by hand.
const dlGPDU = "34 ff 0010 00000200 0000 00 85 01 00 09 00 deadbeef cafebabe"

func TestAppendGPDUBytes(t *testing.T) {
	payload := unhex(t, "deadbeef cafebabe")
	got := gtpu.AppendGPDU(nil, 0x200, 9, true, payload)
	if want := unhex(t, dlGPDU); !bytes.Equal(got, want) {
		t.Fatalf("DL G-PDU\n got %x\nwant %x", got, want)
	}
	ul := gtpu.AppendGPDU(nil, 0x100, 5, false, payload)
	if want := unhex(t, "34 ff 0010 00000100 0000 00 85 01 10 05 00 deadbeef cafebabe"); !bytes.Equal(ul, want) {
		t.Fatalf("UL G-PDU\n got %x\nwant %x", ul, want)
	}
}

func TestParseGPDU(t *testing.T) {
	b := unhex(t, dlGPDU)
	var h gtpu.Header
	if err := gtpu.Parse(b, &h); err != nil {
		t.Fatal(err)
	}
	want := gtpu.Header{Type: gtpu.TypeGPDU, TEID: 0x200, QFI: 9, HasPDUSessionContainer: true,
		PDUType: gtpu.PDUTypeDL, PayloadOffset: 16, Length: 24}
	if h != want {
		t.Fatalf("got %+v\nwant %+v", h, want)
	}
	if !bytes.Equal(h.Payload(b), unhex(t, "deadbeefcafebabe")) {
		t.Errorf("payload %x", h.Payload(b))
	}
	// Padding after the message is not payload.
	if err := gtpu.Parse(append(b, 0, 0), &h); err != nil || h.Length != 24 {
		t.Errorf("padded: %v, length %d", err, h.Length)
	}
}

// Our encoder against go-gtp's decoder, and go-gtp's encoder against ours.
func TestCrossCheckGoGTP(t *testing.T) {
	payload := []byte("0123456789abcdef0123")
	b := gtpu.AppendGPDU(nil, 0xdeadbeef, 63, false, payload)
	gh, err := gogtp.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if gh.TEID != 0xdeadbeef || gh.Type != gogtp.MsgTypeTPDU || len(gh.ExtensionHeaders) != 1 || !bytes.Equal(gh.Payload, payload) {
		t.Fatalf("go-gtp sees %+v", gh)
	}
	eh := gh.ExtensionHeaders[0]
	if eh.Type != gogtp.ExtHeaderTypePDUSessionContainer || !bytes.Equal(eh.Content, []byte{0x10, 63}) {
		t.Errorf("extension header %+v", eh)
	}

	// go-gtp builds a UL G-PDU with a UDP Port header before the PDU
	// Session Container and a sequence number.
	hdr := gogtp.NewHeaderWithExtensionHeaders(0x36, gogtp.MsgTypeTPDU, 0x1234, 77, payload,
		gogtp.NewExtensionHeader(gogtp.ExtHeaderTypeUDPPort, []byte{0x9c, 0x40}, gogtp.ExtHeaderTypePDUSessionContainer),
		gogtp.NewExtensionHeader(gogtp.ExtHeaderTypePDUSessionContainer, []byte{0x10, 0x07}, gogtp.ExtHeaderTypeNoMoreExtensionHeaders),
	)
	wire, err := hdr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var h gtpu.Header
	if err := gtpu.Parse(wire, &h); err != nil {
		t.Fatalf("%v on %x", err, wire)
	}
	if h.TEID != 0x1234 || !h.HasSeq || h.Seq != 77 || h.UDPPort != 40000 || h.QFI != 7 || h.PDUType != gtpu.PDUTypeUL || !bytes.Equal(h.Payload(wire), payload) {
		t.Errorf("parsed %+v payload %q", h, h.Payload(wire))
	}
}

func TestEchoMessages(t *testing.T) {
	req := gtpu.AppendEchoRequest(nil, 0x4242)
	if want := unhex(t, "32 01 0004 00000000 4242 00 00"); !bytes.Equal(req, want) {
		t.Fatalf("echo request %x, want %x", req, want)
	}
	resp := gtpu.AppendEchoResponse(nil, 0x4242)
	m, err := gogtp.Parse(resp)
	if err != nil {
		t.Fatal(err)
	}
	er, ok := m.(*gogtp.EchoResponse)
	if !ok || er.Sequence() != 0x4242 || er.Recovery == nil {
		t.Fatalf("go-gtp sees %#v", m)
	}
	if rec, err := er.Recovery.Recovery(); err != nil || rec != 0 {
		t.Errorf("recovery %d %v", rec, err)
	}
	var h gtpu.Header
	if err := gtpu.Parse(resp, &h); err != nil || h.Type != gtpu.TypeEchoResponse {
		t.Fatal(h, err)
	}
	if rec, err := gtpu.ParseRecovery(h.Payload(resp)); err != nil || rec != 0 {
		t.Errorf("recovery %d %v", rec, err)
	}
}

func TestErrorIndication(t *testing.T) {
	ei := &gtpu.ErrorIndication{Seq: 3, TEID: 0xabcdef01, PeerAddr: []byte{10, 100, 3, 2}, UDPPort: 2152}
	b := gtpu.AppendErrorIndication(nil, ei)
	m, err := gogtp.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	ge, ok := m.(*gogtp.ErrorIndication)
	if !ok {
		t.Fatalf("go-gtp sees %T", m)
	}
	if teid, err := ge.TEIDDataI.TEID(); err != nil || teid != 0xabcdef01 {
		t.Errorf("TEID Data I %#x %v", teid, err)
	}
	if ip, err := ge.GTPUPeerAddress.IPAddress(); err != nil || ip != "10.100.3.2" {
		t.Errorf("peer %s %v", ip, err)
	}
	back, err := gtpu.ParseErrorIndication(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.TEID != ei.TEID || back.Seq != 3 || back.UDPPort != 2152 || !bytes.Equal(back.PeerAddr, ei.PeerAddr) {
		t.Errorf("round trip %+v", back)
	}

	// go-gtp's encoding (no extension header) decodes with ours.
	g := gogtp.NewErrorIndication(0, 9, gogtpie.NewTEIDDataI(0x77), gogtpie.NewGSNAddressByIP(net.IPv4(192, 0, 2, 1)))
	wire, err := g.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	e2, err := gtpu.ParseErrorIndication(wire)
	if err != nil {
		t.Fatal(err)
	}
	if e2.TEID != 0x77 || !bytes.Equal(e2.PeerAddr, []byte{192, 0, 2, 1}) || e2.Seq != 9 {
		t.Errorf("decoded %+v", e2)
	}
	// Missing IEs are an error.
	if _, err := gtpu.ParseErrorIndication(gtpu.AppendEchoRequest(nil, 1)); err == nil {
		t.Error("an Echo Request parsed as Error Indication")
	}
}

func TestEndMarker(t *testing.T) {
	m := gogtp.NewEndMarker()
	m.SetTEID(0x55)
	wire, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var h gtpu.Header
	if err := gtpu.Parse(wire, &h); err != nil || h.Type != gtpu.TypeEndMarker || h.TEID != 0x55 {
		t.Errorf("%+v %v", h, err)
	}
	if teid, err := gtpu.ParseEndMarker(wire); err != nil || teid != 0x55 {
		t.Errorf("go-gtp's End Marker: TEID %#x, %v", teid, err)
	}

	// Ours, byte for byte (TS 29.281 §7.3.2: header only, no S flag).
	em := gtpu.AppendEndMarker(nil, 0xa0b0c0d0)
	if want := unhex(t, "30 fe 0000 a0b0c0d0"); !bytes.Equal(em, want) || len(em) != gtpu.EndMarkerLen {
		t.Fatalf("end marker %x, want %x", em, want)
	}
	if teid, err := gtpu.ParseEndMarker(em); err != nil || teid != 0xa0b0c0d0 {
		t.Errorf("round trip: TEID %#x, %v", teid, err)
	}
	gm, err := gogtp.Parse(em)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := gm.(*gogtp.EndMarker); !ok || e.TEID() != 0xa0b0c0d0 {
		t.Errorf("go-gtp sees %T %+v", gm, gm)
	}
	// Appending to a buffer with room allocates nothing.
	buf := make([]byte, 0, 64)
	if a := testing.AllocsPerRun(100, func() { buf = gtpu.AppendEndMarker(buf[:0], 7) }); a != 0 {
		t.Errorf("AppendEndMarker: %v allocations", a)
	}
	// A Private Extension IE (TLV 255) is allowed and skipped.
	if teid, err := gtpu.ParseEndMarker(unhex(t, "30 fe 0005 00000009 ff 0002 0001")); err != nil || teid != 9 {
		t.Errorf("with private extension: %#x %v", teid, err)
	}
	for _, bad := range []string{
		"30 fe 0000 00000000",         // TEID 0
		"30 ff 0000 00000001",         // a G-PDU
		"30 fe 0002 00000001 0e",      // Recovery IE cut short
		"30 fe 0003 00000001 ff 0005", // TLV past the end
		"30 fe 0004 00000001",         // length past the datagram
	} {
		if _, err := gtpu.ParseEndMarker(unhex(t, bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		want      error
	}{
		{"short", "30ff0000", gtpu.ErrTooShort},
		{"version 2", "50ff0000 00000001", gtpu.ErrVersion},
		{"GTP prime", "20ff0000 00000001", gtpu.ErrVersion},
		{"length past end", "30ff0010 00000001 00", gtpu.ErrLength},
		{"optional part missing", "32ff0000 00000001", gtpu.ErrTooShort},
		{"zero extension length", "34ff0008 00000001 00000085 00000000", gtpu.ErrExtension},
		{"extension past length", "34ff0008 00000001 00000085 02000000", gtpu.ErrExtension},
		{"chain runs off the end", "34ff0008 00000001 00000085 01000985", gtpu.ErrExtension},
		{"container too short", "34ff0004 00000001 00000085", gtpu.ErrExtension},
		{"unknown required extension", "34ff0008 00000001 000000a0 01000000", gtpu.ErrUnsupportedExtension},
	} {
		var h gtpu.Header
		if err := gtpu.Parse(unhex(t, tc.hex), &h); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Unknown extension that needs no comprehension is skipped.
	var h gtpu.Header
	if err := gtpu.Parse(unhex(t, "34ff000c 00000001 00000020 01aabb85 01000300"), &h); err != nil || h.QFI != 3 || h.PayloadOffset != 20 {
		t.Errorf("skipping optional extension: %+v %v", h, err)
	}
}

func TestParseNoAlloc(t *testing.T) {
	b := gtpu.AppendGPDU(nil, 1, 1, true, make([]byte, 100))
	var h gtpu.Header
	hdr := make([]byte, gtpu.GPDUHeaderLen)
	if a := testing.AllocsPerRun(100, func() {
		_ = gtpu.Parse(b, &h)
		gtpu.PutGPDUHeader(hdr, 7, 9, true, 100)
	}); a != 0 {
		t.Errorf("%v allocations", a)
	}
}

// TestDecodeAllocations: a UPF decodes Error Indications and Echo
// Responses on its packet path, which allocates nothing.
func TestDecodeAllocations(t *testing.T) {
	ei := gtpu.AppendErrorIndication(nil, &gtpu.ErrorIndication{Seq: 1, TEID: 9, PeerAddr: []byte{10, 100, 3, 1}, UDPPort: 2152})
	resp := gtpu.AppendEchoResponse(nil, 7)
	var h gtpu.Header
	if err := gtpu.Parse(resp, &h); err != nil {
		t.Fatal(err)
	}
	var e gtpu.ErrorIndication
	n := testing.AllocsPerRun(100, func() {
		if err := e.Decode(ei); err != nil || e.TEID != 9 {
			t.Fatal(err)
		}
		if _, err := gtpu.ParseRecovery(h.Payload(resp)); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per decode", n)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(unhexF(dlGPDU))
	f.Add(gtpu.AppendEchoRequest(nil, 1))
	f.Add(gtpu.AppendErrorIndication(nil, &gtpu.ErrorIndication{TEID: 5, PeerAddr: []byte{1, 2, 3, 4}, UDPPort: 9}))
	f.Add(unhexF("34ff000c 00000001 00000020 01aabb85 01000300"))
	f.Add(unhexF("34ff0008 00000001 00000085 01000985"))
	f.Add(gtpu.AppendEndMarker(nil, 0x55))
	f.Add(unhexF("30fe0005 00000009 ff000200 01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h gtpu.Header
		if err := gtpu.Parse(b, &h); err != nil {
			return
		}
		if h.PayloadOffset < gtpu.MandatoryLen || h.PayloadOffset > h.Length || h.Length > len(b) {
			t.Fatalf("inconsistent header %+v for %d bytes", h, len(b))
		}
		_ = h.Payload(b)
		if h.Type == gtpu.TypeErrorIndication {
			var e gtpu.ErrorIndication
			if e.Decode(b) == nil {
				// What decodes encodes again to the same content.
				var back gtpu.ErrorIndication
				if err := back.Decode(gtpu.AppendErrorIndication(nil, &e)); err != nil || back.TEID != e.TEID ||
					!bytes.Equal(back.PeerAddr, e.PeerAddr) || back.UDPPort != e.UDPPort {
					t.Fatalf("re-encoded %+v decodes to %+v, %v", e, back, err)
				}
			}
		}
		if h.Type == gtpu.TypeEndMarker {
			if teid, err := gtpu.ParseEndMarker(b); err == nil && teid != h.TEID {
				t.Fatalf("End Marker TEID %#x, header %#x", teid, h.TEID)
			}
		}
		if h.Type == gtpu.TypeEchoResponse {
			_, _ = gtpu.ParseRecovery(h.Payload(b))
		}
	})
}

func unhexF(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}
