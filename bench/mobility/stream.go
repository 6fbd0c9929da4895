package mobility

import (
	"context"
	"encoding/binary"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/tern5g/tern/internal/ipv4pkt"
)

// Stream is the experiments' downlink traffic (L25GC §5.3, Figs 13-14):
// sequence-numbered, timestamped UDP packets from the data network to one
// UE, at a fixed rate, through the UPF's N6 (upf.UPF.InjectDownlink) and
// N3 to the simulated gNB and UE, which hands them to Receive. Sending and
// receiving share the process clock, so each packet's one-way delay is
// exact; a packet never received is lost, one received after a higher
// sequence number is reordered.
type Stream struct {
	inject func(...[]byte) error
	src    netip.AddrPort
	dst    netip.AddrPort
	pps    int
	size   int
	epoch  time.Time

	mu   sync.Mutex
	sent []int64 // send time of each sequence number, ns since epoch
	got  []arrival
	max  int64 // highest sequence number received, -1 = none
	// outOfOrder counts packets that arrived after a higher sequence number.
	outOfOrder int
	// refused counts packets the UPF's N6 did not take (inject failed):
	// sent, so in the windows, and lost at the generator.
	refused int64
}

// arrival is one received packet.
type arrival struct {
	seq    int64
	sentNs int64
	recvNs int64
}

// streamMagic marks the stream's payloads, so stray packets are ignored.
const streamMagic uint32 = 0x7e5e_0001

// payloadHeader is magic, sequence number and send time.
const payloadHeader = 4 + 8 + 8

// NewStream builds a stream of pps packets per second, size bytes of UDP
// payload each (at least the header), from the data network host src to
// the UE at dst; inject hands packets to the UPF's N6.
func NewStream(inject func(...[]byte) error, src, dst netip.AddrPort, pps, size int) *Stream {
	return &Stream{inject: inject, src: src, dst: dst, pps: pps, size: max(size, payloadHeader), epoch: time.Now(), max: -1}
}

// now is the stream's clock.
func (s *Stream) now() int64 { return int64(time.Since(s.epoch)) }

// Run sends until ctx ends: every millisecond the packets due by then, in
// one batch (no timer per packet). Run may be called again after it
// returned: the sequence numbers go on.
func (s *Stream) Run(ctx context.Context) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := s.now()
	s.mu.Lock()
	base := len(s.sent)
	s.mu.Unlock()
	payload := make([]byte, s.size)
	binary.BigEndian.PutUint32(payload, streamMagic)
	var batch [][]byte
	var bufs [][]byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := s.now()
		s.mu.Lock()
		due := base + int((now-start)*int64(s.pps)/int64(time.Second)) - len(s.sent)
		first := int64(len(s.sent))
		for range due {
			s.sent = append(s.sent, now)
		}
		s.mu.Unlock()
		batch = batch[:0]
		for i := range due {
			if i >= len(bufs) {
				bufs = append(bufs, make([]byte, 0, 64+s.size))
			}
			binary.BigEndian.PutUint64(payload[4:], uint64(first+int64(i)))
			binary.BigEndian.PutUint64(payload[12:], uint64(now))
			bufs[i] = ipv4pkt.AppendUDP(bufs[i][:0], s.src.Addr(), s.dst.Addr(), s.src.Port(), s.dst.Port(), payload)
			batch = append(batch, bufs[i])
		}
		if len(batch) > 0 {
			if err := s.inject(batch...); err != nil {
				// A batch the UPF could not take is lost at the generator.
				s.mu.Lock()
				s.refused += int64(len(batch))
				s.mu.Unlock()
			}
		}
	}
}

// packet builds the stream's next packet and records it as sent now, for
// an experiment that hands packets to the UPF itself.
func (s *Stream) packet() []byte {
	payload := make([]byte, s.size)
	binary.BigEndian.PutUint32(payload, streamMagic)
	s.mu.Lock()
	now := s.now()
	seq := len(s.sent)
	s.sent = append(s.sent, now)
	s.mu.Unlock()
	binary.BigEndian.PutUint64(payload[4:], uint64(seq))
	binary.BigEndian.PutUint64(payload[12:], uint64(now))
	return ipv4pkt.AppendUDP(nil, s.src.Addr(), s.dst.Addr(), s.src.Port(), s.dst.Port(), payload)
}

// Receive implements ue.Receiver: it records the stream's packets.
func (s *Stream) Receive(pkt []byte) bool {
	now := s.now()
	payload, ok := udpPayload(pkt)
	if !ok || len(payload) < payloadHeader || binary.BigEndian.Uint32(payload) != streamMagic {
		return false
	}
	seq := int64(binary.BigEndian.Uint64(payload[4:]))
	sent := int64(binary.BigEndian.Uint64(payload[12:]))
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < s.max {
		s.outOfOrder++
	} else {
		s.max = seq
	}
	s.got = append(s.got, arrival{seq: seq, sentNs: sent, recvNs: now})
	return true
}

// udpPayload returns the payload of an IPv4/UDP packet.
func udpPayload(b []byte) ([]byte, bool) {
	if len(b) < 28 || b[0]>>4 != 4 || b[9] != 17 {
		return nil, false
	}
	ihl := int(b[0]&0x0f) * 4
	if len(b) < ihl+8 {
		return nil, false
	}
	return b[ihl+8:], true
}

// Refused is how many packets the UPF's N6 did not take so far.
func (s *Stream) Refused() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Sent is how many packets were sent so far.
func (s *Stream) Sent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.sent))
}

// Mark is the stream's clock now, to window an analysis.
func (s *Stream) Mark() int64 { return s.now() }

// Delays are the delays of the packets sent in [from, to) (stream clock),
// in send order: X send time, Y one-way delay, for the time series plots.
type Delay struct {
	Seq    int64
	SentNs int64
	Delay  time.Duration
}

// Window summarises the packets sent in [from, to) of the stream clock.
type Window struct {
	Sent, Received, Lost int
	// Reordered: received after a packet with a higher sequence number.
	Reordered int
	// Delayed: one-way delay above the threshold the analysis was given.
	Delayed int
	// Late: received, but only after the window was first analysed (in
	// flight when it ended; settle waits for them): delivered, so in
	// Received and not in Lost.
	Late   int
	Delays []Delay
}

// Analyze summarises the packets sent in [from, to): those never
// received are lost; delayed counts the ones whose delay exceeds
// threshold. Call it once the stream has stopped and in-flight packets have
// had time to arrive.
func (s *Stream) Analyze(from, to int64, threshold time.Duration) Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w Window
	lo, _ := slices.BinarySearch(s.sent, from)
	hi, _ := slices.BinarySearch(s.sent, to)
	w.Sent = hi - lo
	seen := make(map[int64]bool, w.Sent)
	maxSeq := int64(-1)
	for _, a := range s.got {
		if a.seq < int64(lo) || a.seq >= int64(hi) || seen[a.seq] {
			continue
		}
		seen[a.seq] = true
		w.Received++
		if a.seq < maxSeq {
			w.Reordered++
		} else {
			maxSeq = a.seq
		}
		d := time.Duration(a.recvNs - a.sentNs)
		if d > threshold {
			w.Delayed++
		}
		w.Delays = append(w.Delays, Delay{Seq: a.seq, SentNs: a.sentNs, Delay: d})
	}
	slices.SortFunc(w.Delays, func(a, b Delay) int { return int(a.Seq - b.Seq) })
	w.Lost = w.Sent - w.Received
	return w
}

// Baseline is the median one-way delay of the packets sent in [from, to).
func (s *Stream) Baseline(from, to int64) time.Duration {
	w := s.Analyze(from, to, time.Hour)
	if len(w.Delays) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(w.Delays))
	for i, d := range w.Delays {
		ds[i] = d.Delay
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// FirstAfter returns the first packet sent at or after from that was
// received, and when (stream clock); ok is false when none was.
func (s *Stream) FirstAfter(from int64) (sentNs, recvNs int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lo, _ := slices.BinarySearch(s.sent, from)
	best := int64(-1)
	for _, a := range s.got {
		if a.seq >= int64(lo) && (best < 0 || a.seq < best) {
			best, sentNs, recvNs = a.seq, a.sentNs, a.recvNs
		}
	}
	return sentNs, recvNs, best >= 0
}
