package udpstat

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// TestReadCountsOverflow: datagrams sent to a socket whose small receive
// buffer is full are counted as its drops, the ones it holds as queued,
// and the two account for every datagram sent.
func TestReadCountsOverflow(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/net/udp is Linux's")
	}
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := rx.SetReadBuffer(1); err != nil { // the kernel's minimum: a few datagrams
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	before, err := Read(rx)
	if err != nil {
		t.Fatal(err)
	}
	const sent = 200
	for range sent {
		if _, err := tx.Write(make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	after, err := Read(rx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Drops-before.Drops == 0 || after.RxQueue == 0 {
		t.Fatalf("200 datagrams into a full buffer: counters %+v before, %+v after", before, after)
	}
	got := 0
	buf := make([]byte, 2048)
	for {
		rx.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := rx.Read(buf); err != nil {
			break
		}
		got++
	}
	if dropped := int(after.Drops - before.Drops); got+dropped != sent {
		t.Errorf("%d received + %d dropped, %d sent", got, dropped, sent)
	}
}
