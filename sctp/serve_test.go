package sctp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// Serve hands messages queued before it was called to the handler first,
// then the rest from pion's read loop, in per-stream order; the handler may
// Send; Serve returns io.EOF when the peer shuts the association down.
func TestServe(t *testing.T) {
	defer checkNoLeak(t)()
	cfg := udpConfig(t)
	l := mustListen(t, cfg)
	defer l.Close()
	c := mustDial(t, cfg)
	defer c.Close()
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()

	const streams, perStream = 4, 40
	msg := func(s uint16, i int) []byte {
		n := i * 7
		if i == perStream/2 {
			n = 5000 // fragmented over several DATA chunks
		}
		return []byte(fmt.Sprintf("stream %d message %d %s", s, i, bytes.Repeat([]byte{'x'}, n)))
	}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			for s := uint16(0); s < streams; s++ {
				if err := c.Send(s, ppidNGAP, msg(s, i)); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
			}
		}
	}
	// The first half arrives before Serve starts and waits in the queue.
	send(0, perStream/2)
	queued := sc.(*assocConn).recv
	deadline := time.Now().Add(5 * time.Second)
	for len(queued) < streams*perStream/2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if len(queued) == 0 {
		t.Fatal("nothing queued before Serve")
	}

	served := make(chan error, 1)
	go func() {
		served <- Serve(sc, func(m Message) {
			if err := sc.Send(m.Stream, m.PPID, m.Data); err != nil {
				t.Errorf("Send from handler: %v", err)
			}
		})
	}()
	send(perStream/2, perStream)

	next := make([]int, streams)
	for n := 0; n < streams*perStream; n++ {
		m, err := recvTimeout(t, c, 5*time.Second)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if m.Stream >= streams {
			t.Fatalf("stream %d", m.Stream)
		}
		i := next[m.Stream]
		if want := msg(m.Stream, i); !bytes.Equal(m.Data, want) {
			t.Fatalf("stream %d message %d: got %.40q..., want %.40q...", m.Stream, i, m.Data, want)
		}
		next[m.Stream]++
	}

	c.Close()
	select {
	case err := <-served:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Serve returned %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the peer closed")
	}
}
