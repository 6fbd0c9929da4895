package sctp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzInspectPacket: the framing check of the encapsulation port never
// panics, and what it builds in reply is itself a valid packet.
func FuzzInspectPacket(f *testing.F) {
	for _, s := range staticSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := append([]byte(nil), b...)
		info, err := inspectPacket(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("inspectPacket modified its input")
		}
		if err != nil {
			return
		}
		if info.chunks < 1 {
			t.Fatalf("accepted a packet without chunks: %+v", info)
		}
		for _, reject := range []bool{false, true} {
			if r := ootbReply(info, reject); r != nil {
				ri, err := inspectPacket(r)
				if err != nil {
					t.Fatalf("reply %x does not parse: %v", r, err)
				}
				if ri.srcPort != info.dstPort || ri.dstPort != info.srcPort {
					t.Fatalf("reply ports %d->%d for packet %d->%d", ri.srcPort, ri.dstPort, info.srcPort, info.dstPort)
				}
			}
		}
	})
}

// FuzzListenerDatagram feeds datagrams into a live listener, as if sent by
// the peer of an established association (A) and by a stranger. With fix
// set, the datagram gets A's ports, verification tag and a valid CRC32c, so
// it reaches pion's chunk parsers and state machine. Whatever happens to A,
// another association (B) on the same socket must keep working and the
// process must not panic.
func FuzzListenerDatagram(f *testing.F) {
	cfg := udpConfig(f)
	cfg.Heartbeat = -1
	cfg.HandshakeTimeout = 200 * time.Millisecond
	srvTap := &recordingTap{}
	srvCfg := cfg
	srvCfg.Tap = srvTap
	srv := startEcho(f, srvCfg)
	f.Cleanup(srv.close)
	l := srv.l.(*udpListener)

	a := mustDial(f, cfg)
	f.Cleanup(func() { a.Close() })
	b := mustDial(f, cfg)
	f.Cleanup(func() { b.Close() })
	for _, c := range []Conn{a, b} {
		if err := c.Send(1, ppidNGAP, []byte("hello")); err != nil {
			f.Fatal(err)
		}
		if _, err := c.Recv(); err != nil {
			f.Fatal(err)
		}
	}
	aUDP := a.LocalAddr().(*Addr).UDP
	aPort := a.LocalAddr().(*Addr).AddrPort.Port()
	var aTag uint32
	for _, p := range srvTap.packets() {
		if !p.out && p.remote == aUDP {
			if info, err := inspectPacket(p.b); err == nil && !info.isInit() {
				aTag = info.vtag
			}
		}
		f.Add(p.b, false) // real INIT, INIT ACK, COOKIE ECHO, DATA, SACK...
	}
	if aTag == 0 {
		f.Fatal("did not see A's verification tag")
	}
	for _, s := range staticSeeds() {
		f.Add(s, true)
		f.Add(s, false)
	}
	stranger := netip.MustParseAddrPort("127.0.0.1:9")

	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		pkt := append([]byte(nil), data...)
		if fix && len(pkt) >= commonHeaderLen {
			binary.BigEndian.PutUint16(pkt[0:2], aPort)
			binary.BigEndian.PutUint16(pkt[2:4], 38412)
			binary.BigEndian.PutUint32(pkt[4:8], aTag)
			binary.LittleEndian.PutUint32(pkt[8:12], packetChecksum(pkt))
		}
		l.dispatch(aUDP, pkt)
		l.dispatch(stranger, pkt)

		msg := []byte("still alive")
		if err := b.Send(2, ppidNGAP, msg); err != nil {
			t.Fatalf("B broken after datagram %x: %v", pkt, err)
		}
		m, err := recvTimeout(t, b, 5*time.Second)
		if err != nil || !bytes.Equal(m.Data, msg) {
			t.Fatalf("B broken after datagram %x: %q, %v", pkt, m.Data, err)
		}
	})
}

// staticSeeds are hand-made packets around the edges of the framing rules.
func staticSeeds() [][]byte {
	hb := controlPacket(packetInfo{srcPort: 1000, dstPort: 38412}, 7, 4, 0)
	abort := controlPacket(packetInfo{srcPort: 1000, dstPort: 38412}, 7, chunkAbort, flagT)
	shutAck := controlPacket(packetInfo{srcPort: 1000, dstPort: 38412}, 7, chunkShutdownAck, 0)
	init := make([]byte, commonHeaderLen+chunkHeaderLen+initFixedLen)
	binary.BigEndian.PutUint16(init[0:2], 1000)
	binary.BigEndian.PutUint16(init[2:4], 38412)
	init[12] = chunkInit
	binary.BigEndian.PutUint16(init[14:16], chunkHeaderLen+initFixedLen)
	binary.BigEndian.PutUint32(init[16:20], 0x01020304) // initiate tag
	binary.BigEndian.PutUint32(init[20:24], 65536)      // a_rwnd
	binary.BigEndian.PutUint16(init[24:26], 16)         // OS
	binary.BigEndian.PutUint16(init[26:28], 16)         // MIS
	binary.BigEndian.PutUint32(init[28:32], 1)          // initial TSN
	binary.LittleEndian.PutUint32(init[8:12], packetChecksum(init))
	badLen := append([]byte(nil), hb...)
	binary.BigEndian.PutUint16(badLen[14:16], 400)
	binary.LittleEndian.PutUint32(badLen[8:12], packetChecksum(badLen))
	return [][]byte{nil, {0}, make([]byte, 16), hb, abort, shutAck, init, badLen, init[:20]}
}

// TestWriteFuzzCorpus regenerates the committed seed corpus from a real
// exchange: TERN_SCTP_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus ./sctp/
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("TERN_SCTP_WRITE_CORPUS") == "" {
		t.Skip("set TERN_SCTP_WRITE_CORPUS=1 to rewrite testdata/fuzz")
	}
	cfg := udpConfig(t)
	tap := &recordingTap{}
	cfg.Tap = tap
	srv := startEcho(t, cfg)
	c := mustDial(t, cfg)
	c.Send(1, ppidNGAP, []byte("NGSetupRequest"))
	recvTimeout(t, c, 5*time.Second)
	c.Close()
	srv.close()
	seeds := staticSeeds()
	for _, p := range tap.packets() {
		if !p.out {
			seeds = append(seeds, p.b)
		}
	}
	for _, target := range []string{"FuzzInspectPacket", "FuzzListenerDatagram"} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%+q)\n", s)
			if target == "FuzzListenerDatagram" {
				body += fmt.Sprintf("bool(%v)\n", i%2 == 0)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
