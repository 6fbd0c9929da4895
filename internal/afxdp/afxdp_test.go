//go:build linux

package afxdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// testNS creates a network namespace holding the veth pair a <-> b and
// moves the calling goroutine's (locked) thread into it until the test
// ends. It skips the test without root.
func testNS(t *testing.T) (a, b netlink.Link) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, veth and AF_XDP")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	name := fmt.Sprintf("afxdp-t%d", os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	run("-n", name, "link", "add", "xa", "type", "veth", "peer", "name", "xb")
	run("-n", name, "link", "set", "xa", "up")
	run("-n", name, "link", "set", "xb", "up")

	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Back to the original namespace; a thread that cannot go
		// back stays locked and dies with the goroutine.
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		orig.Close()
		ns.Close()
	})
	if a, err = netlink.LinkByName("xa"); err != nil {
		t.Fatal(err)
	}
	if b, err = netlink.LinkByName("xb"); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// redirectAll attaches to ifindex an XDP program that redirects every
// frame to the XSKMAP slot of its receive queue.
func redirectAll(t *testing.T, ifindex int) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4})
	if err != nil {
		t.Skipf("XSKMAP refused: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 16, asm.Word), // ctx->rx_queue_index
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Imm(asm.R3, 2), // XDP_PASS when the slot is empty
			asm.FnRedirectMap.Call(),
			asm.Return(),
		},
	})
	if err != nil {
		t.Skipf("XDP program refused: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
	if err != nil {
		t.Skipf("XDP attach refused: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return m
}

func TestRoundTrip(t *testing.T) {
	a, b := testNS(t)
	xsks := redirectAll(t, b.Attrs().Index)

	const frames = 1024
	ua, err := NewUMEM(frames, 2048, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ua.Close()
	ub, err := NewUMEM(frames, 2048, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer ub.Close()
	sa, err := Open(ua, a.Attrs().Index, 0, Options{RingSize: 256})
	if err != nil {
		t.Skipf("AF_XDP refused: %v", err)
	}
	defer sa.Close()
	sb, err := Open(ub, b.Attrs().Index, 0, Options{RingSize: 256, ZeroCopy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if sb.ZeroCopy() {
		t.Log("zero-copy on veth")
	}
	if err := xsks.Put(uint32(0), uint32(sb.FD())); err != nil {
		t.Fatal(err)
	}

	// Free lists: all of a's frames, b's after the fill ring.
	freeA := make([]uint64, 0, frames)
	for i := range frames {
		freeA = append(freeA, ua.Addr(i))
	}
	freeB := make([]uint64, 0, frames)
	for i := range frames {
		freeB = append(freeB, ub.Addr(i))
	}
	n := sb.Fill(freeB)
	freeB = freeB[n:]
	if n != 256 {
		t.Fatalf("filled %d, want the ring size", n)
	}

	mac := func(l netlink.Link) []byte { return l.Attrs().HardwareAddr }
	const total = 5000
	sent, recvd := 0, 0
	descs := make([]unix.XDPDesc, 64)
	addrs := make([]uint64, 64)
	deadline := time.Now().Add(10 * time.Second)
	for recvd < total {
		if time.Now().After(deadline) {
			st, _ := sb.Stats()
			t.Fatalf("sent %d, received %d; b stats %+v", sent, recvd, st)
		}
		// Reap a's completions, then send a batch.
		k := sa.Complete(addrs)
		freeA = append(freeA, addrs[:k]...)
		batch := 0
		for batch < len(descs) && sent+batch < total && len(freeA) > 0 {
			addr := freeA[len(freeA)-1]
			freeA = freeA[:len(freeA)-1]
			f, off := ua.Frame(addr)
			size := 60 + (sent+batch)%1000
			frame := f[off : off+size]
			copy(frame[0:6], mac(b))
			copy(frame[6:12], mac(a))
			binary.BigEndian.PutUint16(frame[12:14], 0x88b5) // local experimental
			binary.BigEndian.PutUint32(frame[14:18], uint32(sent+batch))
			for i := 18; i < size; i++ {
				frame[i] = byte(i + sent + batch)
			}
			descs[batch] = unix.XDPDesc{Addr: addr, Len: uint32(size)}
			batch++
		}
		if batch > 0 {
			q := sa.Transmit(descs[:batch])
			for _, d := range descs[q:batch] {
				freeA = append(freeA, d.Addr)
			}
			sent += q
		}
		if _, err := sa.Kick(); err != nil {
			t.Fatal(err)
		}
		// Receive on b and check each frame.
		m := sb.Receive(descs)
		for _, d := range descs[:m] {
			f, off := ub.Frame(d.Addr)
			if off < 64 {
				t.Fatalf("frame at offset %d: the UMEM headroom is 64", off)
			}
			frame := f[off : off+int(d.Len)]
			if len(frame) < 18 || binary.BigEndian.Uint16(frame[12:14]) != 0x88b5 {
				// The kernel's own frames on a link that just came up
				// (IPv6 router solicitations, MLD reports) reach the
				// socket too: not the test's.
				freeB = append(freeB, d.Addr-uint64(off))
				continue
			}
			seq := int(binary.BigEndian.Uint32(frame[14:18]))
			if int(d.Len) != 60+seq%1000 || !bytes.Equal(frame[0:6], mac(b)) {
				t.Fatalf("frame %d: %d bytes", seq, d.Len)
			}
			for i := 18; i < len(frame); i++ {
				if frame[i] != byte(i+seq) {
					t.Fatalf("frame %d: byte %d is %#x", seq, i, frame[i])
				}
			}
			freeB = append(freeB, d.Addr-uint64(off))
			recvd++
		}
		k = sb.Fill(freeB)
		freeB = freeB[k:]
		if m == 0 && batch == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	// Every frame comes back: a's through the completion ring, b's are
	// on its fill ring or free.
	for deadline := time.Now().Add(2 * time.Second); sa.TxHeld() > 0 && time.Now().Before(deadline); {
		k := sa.Complete(addrs)
		freeA = append(freeA, addrs[:k]...)
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(freeA) != frames {
		t.Errorf("a: %d frames free of %d (TX held %d)", len(freeA), frames, sa.TxHeld())
	}
	if got := len(freeB) + sb.FillHeld(); got != frames {
		t.Errorf("b: %d free + %d on the fill ring, want %d", len(freeB), sb.FillHeld(), frames)
	}
	seen := map[uint64]bool{}
	for _, f := range freeA {
		if seen[f] {
			t.Fatalf("frame %#x returned twice", f)
		}
		seen[f] = true
	}
	st, err := sb.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames each way; b stats %+v", total, st)
}

// TestCycles opens and closes sockets and UMEMs many times: no descriptor
// leaks.
func TestCycles(t *testing.T) {
	_, b := testNS(t)
	xsks := redirectAll(t, b.Attrs().Index)
	before := fds(t)
	for i := range 50 {
		u, err := NewUMEM(256, 2048, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(u, b.Attrs().Index, 0, Options{RingSize: 64})
		if err != nil {
			if i == 0 {
				t.Skipf("AF_XDP refused: %v", err)
			}
			t.Fatal(err)
		}
		if err := xsks.Put(uint32(0), uint32(s.FD())); err != nil {
			t.Fatal(err)
		}
		if err := u.Close(); err == nil {
			t.Fatal("UMEM closed under a socket")
		}
		// The map holds a reference to the socket: the queue stays
		// bound until the entry goes.
		if err := xsks.Delete(uint32(0)); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(s.Close(), s.Close(), u.Close()); err != nil {
			t.Fatal(err)
		}
	}
	if after := fds(t); after != before {
		t.Errorf("descriptors: %d before, %d after", before, after)
	}
}

func fds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
