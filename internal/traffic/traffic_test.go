package traffic

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestBlastReachesSink(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	sink := NewSink(rx)
	defer sink.Close()
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	to := rx.LocalAddr().(*net.UDPAddr)
	ds := []Datagram{{Payload: make([]byte, 100), To: to}, {Payload: make([]byte, 200), To: to}}
	sent, err := Blast(context.Background(), tx, ds, 50*time.Millisecond)
	if err != nil || sent == 0 {
		t.Fatalf("blast: %d, %v", sent, err)
	}
	// Loopback may drop under overload, but something arrives, in whole
	// datagrams of the two sizes.
	deadline := time.Now().Add(2 * time.Second)
	for {
		p, b := sink.Counts()
		if p > 0 && b >= 100*p && b <= 200*p {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink saw %d packets, %d bytes of %d sent", p, b, sent)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Blast(context.Background(), tx, nil, time.Millisecond); err == nil {
		t.Fatal("empty blast accepted")
	}
}
