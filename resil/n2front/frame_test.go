package n2front

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/tern5g/tern/sctp"
)

// sampleFrames is one of each frame, with edge values.
func sampleFrames() [][]byte {
	v4 := netip.MustParseAddrPort("127.0.0.1:38412")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:9899")
	return [][]byte{
		appendHello(nil, 1),
		appendHello(nil, 1<<64-1),
		appendWelcome(nil, 7),
		appendRefuse(nil, refuseStaleEpoch, 9),
		appendOpen(nil, &frame{assoc: 1, streams: 16}),
		appendOpen(nil, &frame{assoc: 1<<32 - 1, resume: true, streams: 2,
			local:  sctp.Addr{AddrPort: v4, UDP: v4},
			remote: sctp.Addr{AddrPort: v6, UDP: v6},
			setup:  []byte{0, 21, 0}, updates: [][]byte{{0, 35, 1}, {0, 35, 2}}}),
		appendUplink(nil, 3, 1, 0, 60, []byte{0, 46, 1}),
		appendUplink(nil, 3, 1<<64-1, 65535, 1<<32-1, make([]byte, maxMessage)),
		appendAssoc(nil, frameClosed, 3),
		appendAck(nil, []uint64{1, 2, 1 << 63}),
		appendDownlink(nil, 3, 1, 60, []byte{0, 4, 1}),
		appendAssoc(nil, frameClose, 3),
		appendOpened(nil),
	}
}

// encodeFrame encodes a decoded frame again.
func encodeFrame(f *frame) []byte {
	switch f.typ {
	case frameHello:
		return appendHello(nil, f.epoch)
	case frameWelcome:
		return appendWelcome(nil, f.epoch)
	case frameRefuse:
		return appendRefuse(nil, f.reason, f.epoch)
	case frameOpen:
		return appendOpen(nil, f)
	case frameUplink:
		return appendUplink(nil, f.assoc, f.stamp, f.stream, f.ppid, f.data)
	case frameClosed, frameClose:
		return appendAssoc(nil, f.typ, f.assoc)
	case frameOpened:
		return appendOpened(nil)
	case frameAck:
		return appendAck(nil, f.stamps)
	case frameDownlink:
		return appendDownlink(nil, f.assoc, f.stream, f.ppid, f.data)
	}
	return nil
}

func TestFrameRoundTrip(t *testing.T) {
	for _, b := range sampleFrames() {
		var f frame
		if err := decodeFrame(b, &f); err != nil {
			t.Fatalf("% x: %v", b[:min(len(b), 32)], err)
		}
		if out := encodeFrame(&f); !bytes.Equal(out, b) {
			t.Errorf("re-encoded % x, want % x", out[:min(len(out), 32)], b[:min(len(b), 32)])
		}
	}
	var f frame
	decodeFrame(sampleFrames()[5], &f)
	want := frame{typ: frameOpen, assoc: 1<<32 - 1, resume: true, streams: 2,
		local:  sctp.Addr{AddrPort: netip.MustParseAddrPort("127.0.0.1:38412"), UDP: netip.MustParseAddrPort("127.0.0.1:38412")},
		remote: sctp.Addr{AddrPort: netip.MustParseAddrPort("[2001:db8::1]:9899"), UDP: netip.MustParseAddrPort("[2001:db8::1]:9899")},
		setup:  []byte{0, 21, 0}, updates: [][]byte{{0, 35, 1}, {0, 35, 2}}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("open decoded as %+v\nwant %+v", f, want)
	}
}

func TestFrameRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":                nil,
		"version only":         {linkVersion},
		"other version":        {linkVersion + 1, frameHello, 0, 0, 0, 0, 0, 0, 0, 1},
		"unknown type":         {linkVersion, 0},
		"short hello":          {linkVersion, frameHello, 0, 0, 0, 0, 0, 0, 1},
		"long hello":           {linkVersion, frameHello, 0, 0, 0, 0, 0, 0, 0, 1, 0},
		"empty uplink":         appendUplink(nil, 1, 1, 0, 60, nil),
		"uplink stamp 0":       appendUplink(nil, 1, 0, 0, 60, []byte{1}),
		"oversized downlink":   appendDownlink(nil, 1, 0, 60, make([]byte, maxMessage+1)),
		"empty ack":            appendAck(nil, nil),
		"ack half stamp":       append(appendAck(nil, []uint64{1}), 0, 0, 0, 1),
		"ack too many":         appendAck(nil, make([]uint64, maxAckBatch+1)),
		"open no streams":      appendOpen(nil, &frame{assoc: 1}),
		"open resume no setup": appendOpen(nil, &frame{assoc: 1, streams: 1, resume: true}),
		"open bad flags":       func() []byte { b := appendOpen(nil, &frame{assoc: 1, streams: 1}); b[6] = 2; return b }(),
		"open bad address":     func() []byte { b := appendOpen(nil, &frame{assoc: 1, streams: 1}); b[9] = 5; return b }(),
		"open setup too long": func() []byte {
			b := appendOpen(nil, &frame{assoc: 1, streams: 1, resume: true, setup: []byte{1}})
			b[len(b)-7] = 0xff // the setup's length
			return b
		}(),
		"open too many updates": appendOpen(nil, &frame{assoc: 1, streams: 1, setup: []byte{1},
			updates: make([][]byte, maxConfigUpdates+1)}),
		"closed short": {linkVersion, frameClosed, 0, 0, 1},
		"opened long":  {linkVersion, frameOpened, 0},
	} {
		var f frame
		if err := decodeFrame(b, &f); !errors.Is(err, errMalformed) {
			t.Errorf("%s: %v, want errMalformed", name, err)
		}
	}
}

// FuzzDecodeFrame: the decoder never panics, rejects with errMalformed,
// and what it accepts encodes back to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	for _, b := range sampleFrames() {
		if len(b) < 1024 {
			f.Add(b)
			f.Add(b[:len(b)/2])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr frame
		if err := decodeFrame(b, &fr); err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error not errMalformed: %v", err)
			}
			return
		}
		if out := encodeFrame(&fr); !bytes.Equal(out, b) {
			t.Fatalf("% x decoded and re-encoded as % x", b, out)
		}
	})
}
