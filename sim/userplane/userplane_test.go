package userplane

import (
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

	"github.com/tern5g/tern/internal/ipv4pkt"
)

var (
	ueAddr = netip.MustParseAddr("10.60.0.7")
	dnAddr = netip.MustParseAddr("10.100.6.2")
)

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
	ip, err := ipv4pkt.ParseIPv4(pkt)
	if err != nil {
		return err
	}
	var reply []byte
	switch ip.Protocol {
	case ipv4pkt.ProtoICMP:
		e, ok := ipv4pkt.ParseICMPEcho(ip.Payload)
		if !ok || e.Type != ipv4pkt.ICMPEchoRequest {
			return nil
		}
		reply = ipv4pkt.AppendICMPEchoReply(nil, ip.Dst, ip.Src, e.ID, e.Seq, e.Payload)
	case ipv4pkt.ProtoUDP:
		u, ok := ipv4pkt.ParseUDP(ip.Payload)
		if !ok || !d.udpEcho {
			return nil
		}
		reply = ipv4pkt.AppendUDP(nil, ip.Dst, ip.Src, u.DstPort, u.SrcPort, u.Payload)
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
	if p.Receive(ipv4pkt.AppendICMPEchoReply(nil, dnAddr, ueAddr, 98, 0, nil)) ||
		p.Receive(ipv4pkt.AppendICMPEchoReply(nil, netip.MustParseAddr("1.1.1.1"), ueAddr, 99, 0, nil)) ||
		p.Receive(ipv4pkt.AppendUDP(nil, dnAddr, ueAddr, 1, 2, nil)) {
		t.Fatal("foreign packet claimed")
	}
	// A second reply for an answered sequence is a duplicate.
	if !p.Receive(ipv4pkt.AppendICMPEchoReply(nil, dnAddr, ueAddr, 99, 0, nil)) {
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
				ip, err := ipv4pkt.ParseIPv4(p)
				if err != nil {
					continue // not ours (the kernel may still send IPv6 chatter)
				}
				u, ok := ipv4pkt.ParseUDP(ip.Payload)
				if ip.Src != ueAddr || ip.Dst != dnAddr || !ok || string(u.Payload) != "up" {
					t.Fatalf("uplink %x", p)
				}
				break wait
			case <-deadline:
				t.Fatal("nothing came out of the TUN")
			}
		}

		// Downlink written to the TUN reaches the socket.
		if !tun.Receive(ipv4pkt.AppendUDP(nil, dnAddr, ueAddr, 9, 40001, []byte("down"))) {
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
