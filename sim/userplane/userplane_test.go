package userplane

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

var (
	ueAddr = netip.MustParseAddr("10.60.0.7")
	dnAddr = netip.MustParseAddr("10.100.6.2")
)

func TestICMPEchoBuildParse(t *testing.T) {
	pkt := AppendICMPEcho(nil, ueAddr, dnAddr, 0x1234, 7, []byte("hello, dn"))
	if !ValidChecksum(pkt) {
		t.Fatal("bad IPv4 header checksum")
	}
	ip, err := ParseIPv4(pkt)
	if err != nil || ip.Src != ueAddr || ip.Dst != dnAddr || ip.Protocol != ProtoICMP || ip.TTL != 64 {
		t.Fatalf("%+v %v", ip, err)
	}
	if checksum(ip.Payload, 0) != 0 {
		t.Fatal("bad ICMP checksum")
	}
	e, ok := ParseICMPEcho(ip.Payload)
	if !ok || e.Type != ICMPEchoRequest || e.ID != 0x1234 || e.Seq != 7 || string(e.Payload) != "hello, dn" {
		t.Fatalf("%+v", e)
	}
	// Odd-length payloads checksum too.
	odd := AppendICMPEchoReply(nil, dnAddr, ueAddr, 1, 2, []byte{1, 2, 3})
	if ip, _ := ParseIPv4(odd); checksum(ip.Payload, 0) != 0 {
		t.Fatal("bad ICMP checksum for an odd payload")
	}
}

func TestUDPBuildParse(t *testing.T) {
	pkt := AppendUDP(nil, ueAddr, dnAddr, 40000, 9, []byte{1, 2, 3, 4, 5})
	ip, err := ParseIPv4(pkt)
	if err != nil || ip.Protocol != ProtoUDP || !ValidChecksum(pkt) {
		t.Fatalf("%+v %v", ip, err)
	}
	u, ok := ParseUDP(ip.Payload)
	if !ok || u.SrcPort != 40000 || u.DstPort != 9 || !bytes.Equal(u.Payload, []byte{1, 2, 3, 4, 5}) {
		t.Fatalf("%+v", u)
	}
	// The UDP checksum verifies over the pseudo-header (RFC 768).
	s, d := ueAddr.As4(), dnAddr.As4()
	pseudo := uint32(s[0])<<8 | uint32(s[1])
	pseudo += uint32(s[2])<<8 | uint32(s[3])
	pseudo += uint32(d[0])<<8 | uint32(d[1])
	pseudo += uint32(d[2])<<8 | uint32(d[3])
	pseudo += ProtoUDP + uint32(len(ip.Payload))
	if checksum(ip.Payload, pseudo) != 0 {
		t.Fatal("bad UDP checksum")
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	good := AppendUDP(nil, ueAddr, dnAddr, 1, 2, []byte{9})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"short":     good[:10],
		"ipv6":      append([]byte{0x60}, good[1:]...),
		"truncated": good[:len(good)-1],
		"ihl":       append([]byte{0x41}, good[1:]...),
	} {
		if _, err := ParseIPv4(b); !errors.Is(err, ErrNotIPv4) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, ok := ParseUDP([]byte{0, 1, 0, 2, 0, 99, 0, 0}); ok {
		t.Error("UDP length beyond the datagram accepted")
	}
	if _, ok := ParseICMPEcho([]byte{3, 0, 0, 0, 0, 0, 0, 0}); ok {
		t.Error("destination unreachable parsed as echo")
	}
}

func FuzzParseIPv4(f *testing.F) {
	f.Add(AppendICMPEcho(nil, ueAddr, dnAddr, 1, 1, []byte("x")))
	f.Add(AppendUDP(nil, ueAddr, dnAddr, 1, 2, nil))
	f.Add([]byte{0x45, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, err := ParseIPv4(b)
		if err != nil {
			return
		}
		ParseICMPEcho(ip.Payload)
		ParseUDP(ip.Payload)
	})
}

// echoDN is a data network host in memory: it answers echo requests and
// (with udpEcho) echoes UDP, delivering the answers to r, dropping every
// dropEvery-th packet.
type echoDN struct {
	mu        sync.Mutex
	r         Receiver
	udpEcho   bool
	dropEvery int
	n         int
}

func (d *echoDN) send(pkt []byte) error {
	d.mu.Lock()
	d.n++
	drop := d.dropEvery > 0 && d.n%d.dropEvery == 0
	d.mu.Unlock()
	if drop {
		return nil
	}
	ip, err := ParseIPv4(pkt)
	if err != nil {
		return err
	}
	var reply []byte
	switch ip.Protocol {
	case ProtoICMP:
		e, ok := ParseICMPEcho(ip.Payload)
		if !ok || e.Type != ICMPEchoRequest {
			return nil
		}
		reply = AppendICMPEchoReply(nil, ip.Dst, ip.Src, e.ID, e.Seq, e.Payload)
	case ProtoUDP:
		u, ok := ParseUDP(ip.Payload)
		if !ok || !d.udpEcho {
			return nil
		}
		reply = AppendUDP(nil, ip.Dst, ip.Src, u.DstPort, u.SrcPort, u.Payload)
	}
	// Answer asynchronously, as a network would.
	go d.r.Receive(reply)
	return nil
}

func TestPingCountsRepliesAndLosses(t *testing.T) {
	p, err := NewPinger(PingConfig{Src: ueAddr, Dst: dnAddr, ID: 99, Count: 10, Interval: -1, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dn := &echoDN{r: p, dropEvery: 4}
	res, err := p.Run(context.Background(), dn.send)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 10 || res.Received != 8 || res.Lost != 2 || len(res.RTTs) != 8 || res.Duplicates != 0 {
		t.Fatalf("%+v", res)
	}
	// Foreign packets are not claimed.
	if p.Receive(AppendICMPEchoReply(nil, dnAddr, ueAddr, 98, 0, nil)) ||
		p.Receive(AppendICMPEchoReply(nil, netip.MustParseAddr("1.1.1.1"), ueAddr, 99, 0, nil)) ||
		p.Receive(AppendUDP(nil, dnAddr, ueAddr, 1, 2, nil)) {
		t.Fatal("foreign packet claimed")
	}
	// A second reply for an answered sequence is a duplicate.
	if !p.Receive(AppendICMPEchoReply(nil, dnAddr, ueAddr, 99, 0, nil)) {
		t.Fatal("duplicate not claimed")
	}
}

func TestPingSendErrorsAreLosses(t *testing.T) {
	p, _ := NewPinger(PingConfig{Src: ueAddr, Dst: dnAddr, ID: 1, Count: 3, Interval: time.Millisecond, Timeout: 20 * time.Millisecond})
	res, err := p.Run(context.Background(), func([]byte) error { return errors.New("no tunnel") })
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 3 || res.SendErrors != 3 || res.Lost != 3 || res.Received != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestTransferEcho(t *testing.T) {
	tr, err := NewTransfer(TransferConfig{Src: ueAddr, Dst: dnAddr, DstPort: 7, Bytes: 100_000, Size: 1000, Echo: true, Linger: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dn := &echoDN{r: tr, udpEcho: true, dropEvery: 10}
	res, err := tr.Run(context.Background(), dn.send)
	if err != nil {
		t.Fatal(err)
	}
	if res.PacketsSent != 100 || res.BytesSent != 100_000 || res.PacketsReceived != 90 || res.Lost != 10 || res.UplinkBps() <= 0 {
		t.Fatalf("%+v", res)
	}
}

func TestTransferPacedWithoutEcho(t *testing.T) {
	tr, _ := NewTransfer(TransferConfig{Src: ueAddr, Dst: dnAddr, Bytes: 10_000, Size: 1000, Rate: 8_000_000, Linger: time.Millisecond})
	var n int
	res, err := tr.Run(context.Background(), func([]byte) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 10 kB at 1 MB/s: the last datagram leaves after 9 ms at the earliest.
	if n != 10 || res.PacketsSent != 10 || res.Lost != 0 || res.Duration < 9*time.Millisecond {
		t.Fatalf("%d sent, %+v", n, res)
	}
}

func TestTransferStopsWithContext(t *testing.T) {
	tr, _ := NewTransfer(TransferConfig{Src: ueAddr, Dst: dnAddr, Bytes: 1 << 30, Rate: 1000})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := tr.Run(ctx, func([]byte) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
}

// inNewNetns runs f on a locked thread inside a fresh network namespace.
func inNewNetns(t *testing.T, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		t.Skipf("needs root: new network namespace: %v", err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			// The thread must not go back to the pool in the wrong namespace.
			panic(err)
		}
		ns.Close()
	}()
	f()
}

func TestTUN(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: TUN device and policy routing")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("needs /dev/net/tun")
	}
	inNewNetns(t, func() {
		tun, err := OpenTUN(TUNConfig{Name: "uesimtun0", Addr: ueAddr, Table: 1001})
		if err != nil {
			t.Fatal(err)
		}
		defer tun.Close()
		uplink := make(chan []byte, 16)
		go tun.Serve(func(p []byte) error {
			uplink <- append([]byte(nil), p...)
			return nil
		})

		// A socket bound to the session address is routed into the TUN by
		// the policy rule.
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ueAddr.AsSlice(), Port: 40001})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.WriteToUDP([]byte("up"), &net.UDPAddr{IP: dnAddr.AsSlice(), Port: 9}); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(3 * time.Second)
	wait:
		for {
			select {
			case p := <-uplink:
				ip, err := ParseIPv4(p)
				if err != nil {
					continue // not ours (the kernel may still send IPv6 chatter)
				}
				u, ok := ParseUDP(ip.Payload)
				if ip.Src != ueAddr || ip.Dst != dnAddr || !ok || string(u.Payload) != "up" {
					t.Fatalf("uplink %x", p)
				}
				break wait
			case <-deadline:
				t.Fatal("nothing came out of the TUN")
			}
		}

		// Downlink written to the TUN reaches the socket.
		if !tun.Receive(AppendUDP(nil, dnAddr, ueAddr, 9, 40001, []byte("down"))) {
			t.Fatal("TUN refused a packet")
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 100)
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil || string(buf[:n]) != "down" || from.Addr() != dnAddr {
			t.Fatalf("downlink %q from %s: %v", buf[:n], from, err)
		}
		if tun.Uplink.Load() < 1 || tun.Downlink.Load() != 1 {
			t.Fatalf("counters up %d down %d", tun.Uplink.Load(), tun.Downlink.Load())
		}
		if err := tun.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tun.Done():
		case <-time.After(3 * time.Second):
			t.Fatal("Serve still running after Close")
		}
	})
}
