package sctp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTransportSelection(t *testing.T) {
	cfg := Config{}.withDefaults()
	got, err := cfg.transport()
	if err != nil {
		t.Fatal(err)
	}
	want := TransportUDP
	if KernelAvailable() {
		want = TransportKernel
	}
	if got != want {
		t.Errorf("auto picked %q, want %q (KernelAvailable=%v)", got, want, KernelAvailable())
	}
	if !KernelAvailable() {
		_, err := Listen(Config{Transport: TransportKernel}, "127.0.0.1:38412")
		if !errors.Is(err, ErrKernelUnavailable) {
			t.Errorf("forced kernel without kernel SCTP: err %v, want ErrKernelUnavailable", err)
		}
	}
	if _, err := Listen(Config{Transport: "quic"}, "127.0.0.1:38412"); err == nil {
		t.Error("unknown transport accepted")
	}
	if _, err := Listen(Config{Transport: TransportUDP, UDPPort: 70000}, "127.0.0.1:38412"); err == nil {
		t.Error("UDP port 70000 accepted")
	}
}

// Several streams, PPID 60, both directions: every message arrives whole,
// with its stream and PPID, in order within its stream.
func TestAssociationLoopback(t *testing.T) {
	defer checkNoLeak(t)()
	cfg := udpConfig(t)
	srv := startEcho(t, cfg)
	defer srv.close()
	c := mustDial(t, cfg)
	defer c.Close()

	if got := c.OutboundStreams(); got != DefaultStreams {
		t.Errorf("OutboundStreams = %d, want %d", got, DefaultStreams)
	}
	ra, ok := c.RemoteAddr().(*Addr)
	if !ok || ra.AddrPort.Port() != 38412 || int(ra.UDP.Port()) != cfg.UDPPort {
		t.Errorf("RemoteAddr = %#v, want SCTP port 38412 over UDP %d", c.RemoteAddr(), cfg.UDPPort)
	}

	const streams, perStream = 4, 50
	for i := 0; i < perStream; i++ {
		for s := uint16(0); s < streams; s++ {
			data := []byte(fmt.Sprintf("stream %d message %d %s", s, i, bytes.Repeat([]byte{'x'}, i*7)))
			if err := c.Send(s, ppidNGAP, data); err != nil {
				t.Fatalf("Send: %v", err)
			}
		}
	}
	next := make([]int, streams)
	for n := 0; n < streams*perStream; n++ {
		m, err := recvTimeout(t, c, 5*time.Second)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if m.PPID != ppidNGAP {
			t.Fatalf("PPID %d, want 60", m.PPID)
		}
		if m.Stream >= streams {
			t.Fatalf("stream %d, sent only on 0..%d", m.Stream, streams-1)
		}
		i := next[m.Stream]
		want := fmt.Sprintf("stream %d message %d %s", m.Stream, i, bytes.Repeat([]byte{'x'}, i*7))
		if string(m.Data) != want {
			t.Fatalf("stream %d message %d: got %q, want %q", m.Stream, i, m.Data, want)
		}
		next[m.Stream]++
	}
}

// A message larger than one packet is fragmented and reassembled.
func TestLargeMessage(t *testing.T) {
	cfg := udpConfig(t)
	srv := startEcho(t, cfg)
	defer srv.close()
	c := mustDial(t, cfg)
	defer c.Close()
	big := make([]byte, 20000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := c.Send(3, ppidNGAP, big); err != nil {
		t.Fatal(err)
	}
	m, err := recvTimeout(t, c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Stream != 3 || !bytes.Equal(m.Data, big) {
		t.Fatalf("got stream %d, %d bytes; want stream 3, %d bytes intact", m.Stream, len(m.Data), len(big))
	}
	if err := c.Send(0, ppidNGAP, nil); !errors.Is(err, ErrEmptyMessage) {
		t.Errorf("empty Send: %v, want ErrEmptyMessage", err)
	}
}

// Many gNBs on one listener: one UDP socket, one association each.
func TestManyAssociations(t *testing.T) {
	defer checkNoLeak(t)()
	cfg := udpConfig(t)
	srv := startEcho(t, cfg)
	defer srv.close()

	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, cfg, "127.0.0.1:38412")
			if err != nil {
				errs <- fmt.Errorf("dial %d: %w", i, err)
				return
			}
			defer c.Close()
			for k := 0; k < 5; k++ {
				msg := []byte(fmt.Sprintf("gNB %d msg %d", i, k))
				if err := c.Send(uint16(k%2), ppidNGAP, msg); err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
				m, err := c.Recv()
				if err != nil {
					errs <- fmt.Errorf("recv %d: %w", i, err)
					return
				}
				if !bytes.Equal(m.Data, msg) {
					errs <- fmt.Errorf("gNB %d got %q, want %q", i, m.Data, msg)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := srv.n.Load(); got != n {
		t.Errorf("listener accepted %d associations, want %d", got, n)
	}
}

// RFC 9260 §5.1.1: outbound streams = min(own OS, peer MIS).
func TestStreamCountEnforcement(t *testing.T) {
	cfg := udpConfig(t)
	srvCfg := cfg
	srvCfg.Streams = 4
	l := mustListen(t, srvCfg)
	defer l.Close()
	accepted := make(chan Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	cliCfg := cfg
	cliCfg.Streams = 2
	c := mustDial(t, cliCfg)
	defer c.Close()
	s := <-accepted
	defer s.Close()

	if got := c.OutboundStreams(); got != 2 {
		t.Errorf("client OutboundStreams = %d, want min(2, server MIS 4) = 2", got)
	}
	if got := s.OutboundStreams(); got != 2 {
		t.Errorf("server OutboundStreams = %d, want min(4, client MIS 2) = 2", got)
	}
	if err := c.Send(2, ppidNGAP, []byte("x")); !errors.Is(err, ErrInvalidStream) {
		t.Errorf("client Send on stream 2: %v, want ErrInvalidStream", err)
	}
	if err := s.Send(3, ppidNGAP, []byte("x")); !errors.Is(err, ErrInvalidStream) {
		t.Errorf("server Send on stream 3: %v, want ErrInvalidStream", err)
	}
	if err := s.Send(1, ppidNGAP, []byte("ok")); err != nil {
		t.Fatalf("server Send on stream 1: %v", err)
	}
	m, err := recvTimeout(t, c, 5*time.Second)
	if err != nil || m.Stream != 1 || string(m.Data) != "ok" {
		t.Fatalf("Recv = %+v, %v", m, err)
	}
}

// The peer's DATA on a stream beyond our inbound count is dropped (and
// acknowledged) instead of opening a stream (RFC 9260 §6.5).
func TestInboundStreamLimit(t *testing.T) {
	cfg := udpConfig(t)
	srvCfg := cfg
	srvCfg.Streams = 2
	l := mustListen(t, srvCfg)
	defer l.Close()
	accepted := make(chan Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c := mustDial(t, cfg)
	defer c.Close()
	s := <-accepted
	defer s.Close()
	// Bypass our own Send check to act as a misbehaving peer.
	ac := c.(*assocConn)
	st, err := ac.assoc.OpenStream(5, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteSCTP([]byte("bad"), 60); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(1, ppidNGAP, []byte("good")); err != nil {
		t.Fatal(err)
	}
	m, err := recvTimeout(t, s, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Stream != 1 || string(m.Data) != "good" {
		t.Fatalf("got stream %d %q; the message on stream 5 should have been discarded", m.Stream, m.Data)
	}
}

func TestPeerCloseDetected(t *testing.T) {
	defer checkNoLeak(t)()
	for _, closer := range []string{"client", "server"} {
		t.Run(closer, func(t *testing.T) {
			cfg := udpConfig(t)
			l := mustListen(t, cfg)
			defer l.Close()
			accepted := make(chan Conn, 1)
			go func() {
				c, err := l.Accept()
				if err == nil {
					accepted <- c
				}
			}()
			c := mustDial(t, cfg)
			s := <-accepted
			if err := c.Send(0, ppidNGAP, []byte("last words")); err != nil {
				t.Fatal(err)
			}
			closing, other := c, s
			if closer == "server" {
				closing, other = s, c
				if m, err := recvTimeout(t, s, 5*time.Second); err != nil || string(m.Data) != "last words" {
					t.Fatalf("server Recv = %q, %v", m.Data, err)
				}
			}
			if err := closing.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if closer == "client" {
				// Data sent before the SHUTDOWN is still delivered first.
				if m, err := recvTimeout(t, s, 5*time.Second); err != nil || string(m.Data) != "last words" {
					t.Fatalf("server Recv = %q, %v", m.Data, err)
				}
			}
			if _, err := recvTimeout(t, other, 5*time.Second); !errors.Is(err, io.EOF) {
				t.Fatalf("Recv after peer SHUTDOWN: %v, want io.EOF", err)
			}
			if err := other.Send(0, ppidNGAP, []byte("x")); err == nil {
				t.Error("Send after peer SHUTDOWN succeeded")
			}
			if _, err := closing.Recv(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Recv after Close: %v, want net.ErrClosed", err)
			}
			other.Close()
		})
	}
}

func TestListenerClose(t *testing.T) {
	defer checkNoLeak(t)()
	cfg := udpConfig(t)
	l := mustListen(t, cfg)
	accepted := make(chan Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c := mustDial(t, cfg)
	defer c.Close()
	s := <-accepted
	defer s.Close()

	acceptErr := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		acceptErr <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-acceptErr:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still blocked after Close")
	}
	if _, err := l.Accept(); err == nil {
		t.Error("Accept after Close succeeded")
	}

	// An accepted association outlives its listener.
	if err := c.Send(0, ppidNGAP, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if m, err := recvTimeout(t, s, 5*time.Second); err != nil || string(m.Data) != "still here" {
		t.Fatalf("Recv after listener close = %q, %v", m.Data, err)
	}

	// New associations are refused with an ABORT, so Dial fails fast.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if c2, err := Dial(ctx, cfg, "127.0.0.1:38412"); err == nil {
		c2.Close()
		t.Fatal("Dial to a closed listener succeeded")
	}
	if ctx.Err() != nil {
		t.Errorf("Dial to a closed listener took until the deadline (%v)", time.Since(start))
	}
}

func TestHeartbeat(t *testing.T) {
	defer checkNoLeak(t)()
	t.Run("keeps", func(t *testing.T) {
		cfg := udpConfig(t)
		cfg.Heartbeat = 20 * time.Millisecond
		cfg.MaxMissedHeartbeats = 3
		srv := startEcho(t, cfg)
		defer srv.close()
		c := mustDial(t, cfg)
		defer c.Close()
		time.Sleep(300 * time.Millisecond) // ~15 heartbeats, idle
		if acks := c.(*assocConn).assoc.HeartbeatAcks(); acks == 0 {
			t.Error("no HEARTBEAT ACK received while idle")
		}
		if err := c.Send(0, ppidNGAP, []byte("alive")); err != nil {
			t.Fatal(err)
		}
		if m, err := recvTimeout(t, c, 5*time.Second); err != nil || string(m.Data) != "alive" {
			t.Fatalf("after idle period: %q, %v", m.Data, err)
		}
	})
	t.Run("declares dead", func(t *testing.T) {
		srvCfg := udpConfig(t)
		srvCfg.Heartbeat = -1 // only the client probes
		l := mustListen(t, srvCfg)
		defer l.Close()
		proxy := startProxy(t, srvCfg.UDPPort)
		defer proxy.close()
		accepted := make(chan Conn, 1)
		go func() {
			c, err := l.Accept()
			if err == nil {
				accepted <- c
			}
		}()
		cliCfg := Config{Transport: TransportUDP, UDPPort: proxy.port(), Heartbeat: 20 * time.Millisecond, MaxMissedHeartbeats: 3}
		c := mustDial(t, cliCfg)
		defer c.Close()
		s := <-accepted
		defer s.Close()
		proxy.drop.Store(true) // the server vanishes
		_, err := recvTimeout(t, c, 5*time.Second)
		if !errors.Is(err, ErrPeerDead) {
			t.Fatalf("Recv with a silent peer: %v, want ErrPeerDead", err)
		}
	})
}

// The tap sees the whole exchange, and DATA chunks carry stream and PPID 60
// on the wire.
func TestTapAndWireFormat(t *testing.T) {
	cfg := udpConfig(t)
	srvTap := &recordingTap{}
	srvCfg := cfg
	srvCfg.Tap = srvTap
	srv := startEcho(t, srvCfg)
	defer srv.close()
	cliTap := &recordingTap{}
	cliCfg := cfg
	cliCfg.Tap = cliTap
	c := mustDial(t, cliCfg)
	if err := c.Send(7, ppidNGAP, []byte("NGSetupRequest")); err != nil {
		t.Fatal(err)
	}
	if _, err := recvTimeout(t, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Close()

	pk := cliTap.packets()
	if len(pk) < 4 || !pk[0].out {
		t.Fatalf("client tap saw %d packets", len(pk))
	}
	init, err := inspectPacket(pk[0].b)
	if err != nil || !init.isInit() || init.dstPort != 38412 || int(init.srcPort) != int(pk[0].local.Port()) {
		t.Fatalf("first packet: %+v %v; want INIT from SCTP port %d to 38412", init, err, pk[0].local.Port())
	}
	if int(pk[0].remote.Port()) != cfg.UDPPort {
		t.Errorf("INIT sent to UDP port %d, want %d", pk[0].remote.Port(), cfg.UDPPort)
	}
	if initParamsHaveIData(pk[0].b) {
		t.Error("INIT advertises I-DATA (interleaving must be off)")
	}
	found := false
	for _, p := range pk {
		if data, ok := firstDataChunk(p.b); ok && p.out {
			found = true
			if sid := binary.BigEndian.Uint16(data[8:10]); sid != 7 {
				t.Errorf("DATA stream %d, want 7", sid)
			}
			if ppid := binary.BigEndian.Uint32(data[12:16]); ppid != 60 {
				t.Errorf("DATA PPID on the wire %d, want 60", ppid)
			}
		}
	}
	if !found {
		t.Error("client tap saw no outbound DATA chunk")
	}
	if len(srvTap.packets()) < 4 {
		t.Errorf("server tap saw %d packets", len(srvTap.packets()))
	}
}

// firstDataChunk returns the first DATA chunk (type 0) of a packet.
func firstDataChunk(b []byte) ([]byte, bool) {
	rest := b[commonHeaderLen:]
	for len(rest) >= chunkHeaderLen {
		n := int(binary.BigEndian.Uint16(rest[2:4]))
		if n < chunkHeaderLen || n > len(rest) {
			return nil, false
		}
		if rest[0] == 0 && n >= 16 {
			return rest[:n], true
		}
		rest = rest[min((n+3)&^3, len(rest)):]
	}
	return nil, false
}

// initParamsHaveIData reports whether an INIT's Supported Extensions
// parameter (0x8008) lists I-DATA (64).
func initParamsHaveIData(b []byte) bool {
	params := b[commonHeaderLen+chunkHeaderLen+initFixedLen:]
	for len(params) >= 4 {
		typ := binary.BigEndian.Uint16(params[0:2])
		n := int(binary.BigEndian.Uint16(params[2:4]))
		if n < 4 || n > len(params) {
			return false
		}
		if typ == 0x8008 && bytes.IndexByte(params[4:n], 64) >= 0 {
			return true
		}
		params = params[min((n+3)&^3, len(params)):]
	}
	return false
}

// An out-of-the-blue packet gets an ABORT with the T bit (RFC 9260 §8.4).
func TestOOTBAbort(t *testing.T) {
	cfg := udpConfig(t)
	l := mustListen(t, cfg)
	defer l.Close()
	pc, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: cfg.UDPPort})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	// A HEARTBEAT (type 4) for an association the listener never had.
	pkt := controlPacket(packetInfo{srcPort: 38412, dstPort: 5555}, 0xdeadbeef, 4, 0)
	if _, err := pc.Write(pkt); err != nil {
		t.Fatal(err)
	}
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1500)
	n, err := pc.Read(buf)
	if err != nil {
		t.Fatalf("no reply to OOTB packet: %v", err)
	}
	info, err := inspectPacket(buf[:n])
	if err != nil || !info.hasAbort || info.vtag != 0xdeadbeef || buf[13]&flagT == 0 {
		t.Fatalf("reply %x (%+v, %v), want ABORT with T bit and tag deadbeef", buf[:n], info, err)
	}
	if info.srcPort != 38412 || info.dstPort != 5555 {
		t.Errorf("reply ports %d->%d, want 38412->5555", info.srcPort, info.dstPort)
	}
}

// BenchmarkRoundTrip measures one NGAP-sized message to an echo server and
// back over loopback (userspace SCTP over UDP).
func BenchmarkRoundTrip(b *testing.B) {
	cfg := udpConfig(b)
	cfg.Heartbeat = -1
	srv := startEcho(b, cfg)
	defer srv.close()
	c := mustDial(b, cfg)
	defer c.Close()
	msg := make([]byte, 100) // a typical NGAP UE-associated message
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Send(1, ppidNGAP, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCloseVanishedPeer: closing an association whose peer is gone (its
// process killed: no SHUTDOWN ACK will ever come) takes a few round trips,
// not the old fixed 2 s, so a core stops promptly.
func TestCloseVanishedPeer(t *testing.T) {
	cfg := udpConfig(t)
	l := mustListen(t, cfg)
	defer l.Close()
	// The client reaches the listener through a relay; closing the relay
	// makes the client vanish without a word.
	relay, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	up, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: cfg.UDPPort})
	if err != nil {
		t.Fatal(err)
	}
	var client atomic.Pointer[net.UDPAddr]
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := relay.ReadFromUDP(buf)
			if err != nil {
				return
			}
			client.Store(from)
			up.Write(buf[:n])
		}
	}()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := up.Read(buf)
			if err != nil {
				return
			}
			if a := client.Load(); a != nil {
				relay.WriteToUDP(buf[:n], a)
			}
		}
	}()
	accepted := make(chan Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	ccfg := cfg
	ccfg.UDPPort = relay.LocalAddr().(*net.UDPAddr).Port
	c := mustDial(t, ccfg)
	s := <-accepted
	if err := c.Send(0, ppidNGAP, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := recvTimeout(t, s, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	relay.Close()
	up.Close()
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close with a vanished peer took %v", d)
	}
	c.Close()
}
