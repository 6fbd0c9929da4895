package sctp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/internal/freeport"
)

const ppidNGAP = 60

// freeUDPPort returns a UDP port that was free a moment ago on loopback, so
// that tests do not collide with a real listener on 9899.
func freeUDPPort(t testing.TB) int {
	t.Helper()
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func udpConfig(t testing.TB) Config {
	return Config{Transport: TransportUDP, UDPPort: freeUDPPort(t)}
}

func mustListen(t testing.TB, cfg Config) Listener {
	t.Helper()
	l, err := Listen(cfg, "127.0.0.1:38412")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	return l
}

func mustDial(t testing.TB, cfg Config) Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg, "127.0.0.1:38412")
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return c
}

// echoServer accepts associations and sends every message back on the same
// stream with the same PPID, until the listener closes.
type echoServer struct {
	l     Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []Conn
	n     atomic.Int64 // associations accepted
}

func startEcho(t testing.TB, cfg Config) *echoServer {
	t.Helper()
	s := &echoServer{l: mustListen(t, cfg)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.l.Accept()
			if err != nil {
				return
			}
			s.n.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				for {
					m, err := c.Recv()
					if err != nil {
						return
					}
					if err := c.Send(m.Stream, m.PPID, m.Data); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *echoServer) close() {
	s.l.Close()
	s.mu.Lock()
	conns := s.conns
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	s.wg.Wait()
}

// recvTimeout is Recv with a deadline, for tests.
func recvTimeout(t testing.TB, c Conn, d time.Duration) (Message, error) {
	t.Helper()
	type res struct {
		m   Message
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, err := c.Recv()
		ch <- res{m, err}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(d):
		t.Fatalf("Recv: no message within %v", d)
		return Message{}, errors.New("timeout")
	}
}

// checkNoLeak fails if goroutines started by the test are still running a
// few seconds after it cleaned up.
func checkNoLeak(t *testing.T) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Fatalf("goroutine leak: %d before, %d after\n%s", before, n, ourStacks(string(buf)))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func ourStacks(all string) string {
	var keep []string
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "tern/sctp") || strings.Contains(g, "pion/sctp") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// recordingTap keeps copies of the datagrams it sees.
type recordingTap struct {
	mu  sync.Mutex
	pkt []tapped
}

type tapped struct {
	out           bool
	local, remote netip.AddrPort
	b             []byte
}

func (r *recordingTap) Packet(out bool, local, remote netip.AddrPort, b []byte) {
	r.mu.Lock()
	r.pkt = append(r.pkt, tapped{out, local, remote, append([]byte(nil), b...)})
	r.mu.Unlock()
}

func (r *recordingTap) packets() []tapped {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tapped(nil), r.pkt...)
}

// udpProxy relays datagrams between a client and a server UDP port and can
// black-hole them, to make a peer disappear without closing anything.
type udpProxy struct {
	front, back *net.UDPConn
	server      netip.AddrPort
	client      atomic.Pointer[netip.AddrPort]
	drop        atomic.Bool
	wg          sync.WaitGroup
}

func startProxy(t testing.TB, serverUDP int) *udpProxy {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &udpProxy{front: front, back: back, server: netip.MustParseAddrPort("127.0.0.1:0")}
	p.server = netip.AddrPortFrom(p.server.Addr(), uint16(serverUDP))
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, maxDatagram)
		for {
			n, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			p.client.Store(&from)
			if !p.drop.Load() {
				back.WriteToUDPAddrPort(buf[:n], p.server)
			}
		}
	}()
	go func() {
		defer p.wg.Done()
		buf := make([]byte, maxDatagram)
		for {
			n, _, err := back.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if c := p.client.Load(); c != nil && !p.drop.Load() {
				front.WriteToUDPAddrPort(buf[:n], *c)
			}
		}
	}()
	return p
}

func (p *udpProxy) port() int { return p.front.LocalAddr().(*net.UDPAddr).Port }

func (p *udpProxy) close() {
	p.front.Close()
	p.back.Close()
	p.wg.Wait()
}
