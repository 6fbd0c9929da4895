package upfu

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Shaping. A QER's MBR (TS 29.244 §5.2.1: the session AMBR is enforced by a
// QER that all the session's PDRs share) is policed by default: a packet
// over the rate is dropped. TS 23.501 §5.7.1.8 leaves the UPF to police or
// shape; with Config.ShapingDelay set, a packet over the rate instead waits
// until the rate allows it, for at most ShapingDelay (so each QER queues
// at most ShapingDelay × MBR bytes), and is dropped ("mbr") only beyond
// that. TCP behind a shaper sees delay rather than loss (Bose et al.).
//
// The worker processes the packet completely (decapsulated or
// encapsulated, counted) and hands the finished output to the shaper with
// its departure time; rules.TokenBucket.Reserve has already moved the
// bucket on, so later packets of the same QER get later departure times
// and the order within a QER holds. The shaper copies the packet into a
// buffer of its own (recycled: no allocation in steady state), keeps the
// packets in a min-heap by departure time, and one goroutine (under
// Pipeline.Run) sends the due ones through the Sink in batches. At most
// Config.ShapingPackets packets wait across the UPF; more are dropped
// ("shaping-queue-full").

// shapeBufSize is the largest output packet the shaper holds: a 1500-byte
// N3 packet with its GTP-U header. Bigger ones are dropped ("mbr").
const shapeBufSize = 2048

// DefaultShapingPackets bounds the packets waiting in the shaper.
const DefaultShapingPackets = 16384

type shapedPacket struct {
	due  int64
	seq  uint64 // FIFO among equal departure times
	buf  []byte // shapeBufSize bytes; the packet is buf[:n]
	n    int
	peer Packet // Peer and Port of the output (Buf unused)
}

type shaper struct {
	maxPackets int
	wake       chan struct{}

	mu   sync.Mutex
	heap []shapedPacket
	seq  uint64
	free [][]byte

	dropped atomic.Uint64 // queue full
	queued  atomic.Int64
}

func newShaper(maxPackets int) *shaper {
	return &shaper{maxPackets: maxPackets, wake: make(chan struct{}, 1)}
}

// push queues a copy of the output packet pk to leave at due. false: the
// queue is full or the packet too big (the caller drops it).
func (s *shaper) push(pk *Packet, due int64) bool {
	if pk.Len > shapeBufSize {
		return false
	}
	s.mu.Lock()
	if len(s.heap) >= s.maxPackets {
		s.mu.Unlock()
		s.dropped.Add(1)
		return false
	}
	var buf []byte
	if n := len(s.free); n > 0 {
		buf, s.free = s.free[n-1], s.free[:n-1]
	} else {
		buf = make([]byte, shapeBufSize)
	}
	copy(buf, pk.Data())
	s.seq++
	s.heap = append(s.heap, shapedPacket{due: due, seq: s.seq, buf: buf, n: pk.Len, peer: Packet{Peer: pk.Peer, Port: pk.Port}})
	s.up(len(s.heap) - 1)
	first := s.heap[0].seq == s.seq
	s.mu.Unlock()
	s.queued.Add(1)
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return true
}

func (s *shaper) less(i, j int) bool {
	a, b := &s.heap[i], &s.heap[j]
	return a.due < b.due || (a.due == b.due && a.seq < b.seq)
}

func (s *shaper) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			return
		}
		s.heap[i], s.heap[parent] = s.heap[parent], s.heap[i]
		i = parent
	}
}

func (s *shaper) down(i int) {
	n := len(s.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.heap[i], s.heap[m] = s.heap[m], s.heap[i]
		i = m
	}
}

// popDue moves up to cap(out)-len(out) packets due by now into out and
// returns it with the departure time of the next waiting packet (0: none).
func (s *shaper) popDue(now int64, out []shapedPacket) ([]shapedPacket, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.heap) > 0 && s.heap[0].due <= now && len(out) < cap(out) {
		out = append(out, s.heap[0])
		last := len(s.heap) - 1
		s.heap[0] = s.heap[last]
		s.heap[last] = shapedPacket{}
		s.heap = s.heap[:last]
		s.down(0)
	}
	if len(s.heap) == 0 {
		return out, 0
	}
	return out, s.heap[0].due
}

func (s *shaper) recycle(sent []shapedPacket) {
	s.mu.Lock()
	for i := range sent {
		s.free = append(s.free, sent[i].buf)
	}
	s.mu.Unlock()
	s.queued.Add(-int64(len(sent)))
}

// run sends the packets as they fall due until ctx ends; what still waits
// then is dropped with the pipeline.
func (s *shaper) run(ctx context.Context, p *Pipeline) {
	const batch = 64
	due := make([]shapedPacket, 0, batch)
	out := make([]Packet, 0, batch)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var next int64
		due, next = s.popDue(p.now(), due[:0])
		if len(due) > 0 {
			out = out[:0]
			for i := range due {
				d := &due[i]
				out = append(out, Packet{Buf: d.buf, Len: d.n, Peer: d.peer.Peer, Port: d.peer.Port})
			}
			if b := p.sink.Load(); b != nil {
				b.s.Send(out)
			} else {
				p.drainDropped.Add(uint64(len(out)))
			}
			clear(out)
			s.recycle(due)
			clear(due)
			if len(due) == cap(due) {
				continue // more may be due already
			}
		}
		wait := time.Hour
		if next != 0 {
			wait = time.Duration(max(next-p.now(), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-timer.C:
		}
	}
}
