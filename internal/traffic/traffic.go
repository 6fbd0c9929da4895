// Package traffic moves UDP datagrams as fast as a socket allows, in
// batches (sendmmsg/recvmmsg through golang.org/x/net/ipv4), for the
// user-plane benchmarks: a Blaster sends prebuilt datagrams round-robin to
// their destinations, a Sink counts what arrives.
package traffic

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
)

// Batch is how many datagrams one sendmmsg/recvmmsg moves at most.
const Batch = 64

// Datagram is one payload and where it goes.
type Datagram struct {
	Payload []byte
	To      *net.UDPAddr
}

// Blast sends ds round-robin on conn until ctx ends or d elapses, and
// returns how many datagrams the kernel accepted. ENOBUFS-style transient
// errors are retried; others end the run.
func Blast(ctx context.Context, conn *net.UDPConn, ds []Datagram, d time.Duration) (uint64, error) {
	if len(ds) == 0 {
		return 0, errors.New("traffic: nothing to send")
	}
	pc := ipv4.NewPacketConn(conn)
	msgs := make([]ipv4.Message, Batch)
	next := 0
	fill := func() {
		for i := range msgs {
			dg := ds[next]
			next++
			if next == len(ds) {
				next = 0
			}
			msgs[i].Buffers = [][]byte{dg.Payload}
			msgs[i].Addr = dg.To
		}
	}
	deadline := time.Now().Add(d)
	var sent uint64
	for n := 0; ; n++ {
		if n%16 == 0 && (ctx.Err() != nil || time.Now().After(deadline)) {
			return sent, nil
		}
		fill()
		k, err := pc.WriteBatch(msgs, 0)
		sent += uint64(k)
		if err != nil {
			if isTransient(err) {
				time.Sleep(10 * time.Microsecond)
				continue
			}
			return sent, err
		}
	}
}

func isTransient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errNoBufs)
}

// Sink counts the datagrams arriving on a socket.
type Sink struct {
	conn           *net.UDPConn
	packets, bytes atomic.Uint64
	done           chan struct{}
}

// NewSink starts counting on conn until Close.
func NewSink(conn *net.UDPConn) *Sink {
	s := &Sink{conn: conn, done: make(chan struct{})}
	conn.SetReadBuffer(8 << 20)
	go s.read()
	return s
}

func (s *Sink) read() {
	defer close(s.done)
	pc := ipv4.NewPacketConn(s.conn)
	msgs := make([]ipv4.Message, Batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 2048)}
	}
	for {
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			return
		}
		var b uint64
		for i := range n {
			b += uint64(msgs[i].N)
		}
		s.packets.Add(uint64(n))
		s.bytes.Add(b)
	}
}

// Counts returns the datagrams and payload bytes seen so far.
func (s *Sink) Counts() (packets, bytes uint64) { return s.packets.Load(), s.bytes.Load() }

// Close stops the sink and its socket.
func (s *Sink) Close() error {
	err := s.conn.Close()
	<-s.done
	return err
}
