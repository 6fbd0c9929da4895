package sctp

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestKernelLoopback runs the loopback exchange over kernel SCTP.
func TestKernelLoopback(t *testing.T) {
	if !KernelAvailable() {
		t.Skip("kernel SCTP not available (socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) fails, e.g. EPROTONOSUPPORT without the sctp module)")
	}
	cfg := Config{Transport: TransportKernel, Streams: 4}
	l, err := Listen(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer l.Close()
	accepted := make(chan Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg, l.Addr().String())
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	s := <-accepted
	defer s.Close()
	if c.OutboundStreams() != 4 {
		t.Errorf("OutboundStreams = %d, want 4", c.OutboundStreams())
	}
	if err := c.Send(4, ppidNGAP, []byte("x")); !errors.Is(err, ErrInvalidStream) {
		t.Errorf("Send on stream 4: %v, want ErrInvalidStream", err)
	}
	for i := uint16(0); i < 4; i++ {
		if err := c.Send(i, ppidNGAP, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		m, err := recvTimeout(t, s, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.PPID != ppidNGAP || len(m.Data) != 1 || uint16(m.Data[0]) != m.Stream {
			t.Fatalf("got %+v", m)
		}
	}
	c.Close()
	if _, err := recvTimeout(t, s, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Errorf("Recv after peer close: %v, want io.EOF", err)
	}
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
}
