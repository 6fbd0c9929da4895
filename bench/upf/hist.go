package upf

import (
	"math"
	"time"
)

// The sink's latency histogram (bpf/bench.c keeps the same layout): one
// bucket per microsecond below linearUS, then histSub buckets per power of
// two (1.6 % wide) up to 2^maxExp µs. Percentiles at the microsecond are
// exact below 2 ms, where a UPF's latency lives, and within 1.6 % above.
const (
	linearUS  = 2048
	linearExp = 11
	subBits   = 6
	histSub   = 1 << subBits
	maxExp    = 31
	// NBuckets is the number of histogram buckets.
	NBuckets = linearUS + (maxExp-linearExp)*histSub
)

// Bucket is the bucket of a latency, as the sink computes it.
func Bucket(d time.Duration) int {
	if d < 0 {
		d = 0
	}
	us := uint64(d / time.Microsecond)
	if us < linearUS {
		return int(us)
	}
	e := 63 - leadingZeros(us)
	if e >= maxExp {
		return NBuckets - 1
	}
	sub := (us >> (e - subBits)) & (histSub - 1)
	return linearUS + (e-linearExp)*histSub + int(sub)
}

func leadingZeros(x uint64) int {
	n := 0
	for x&(1<<63) == 0 && n < 64 {
		x <<= 1
		n++
	}
	return n
}

// bucketBounds is the range [lo, hi) of latencies in bucket b, in µs.
func bucketBounds(b int) (lo, hi float64) {
	if b < linearUS {
		return float64(b), float64(b + 1)
	}
	if b >= NBuckets-1 {
		return math.Ldexp(1, maxExp), math.Ldexp(1, maxExp)
	}
	e := (b-linearUS)/histSub + linearExp
	sub := (b - linearUS) % histSub
	w := math.Ldexp(1, e-subBits)
	lo = math.Ldexp(1, e) + float64(sub)*w
	return lo, lo + w
}

// Histogram is a latency histogram: counts per bucket.
type Histogram []uint64

// Add counts d (the Go twin of the sink, for tests).
func (h Histogram) Add(d time.Duration) { h[Bucket(d)]++ }

// Count is the number of latencies recorded.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the q-quantile in µs: the bucket holding the nearest-rank
// sample, interpolated linearly inside it (0 for an empty histogram).
func (h Histogram) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen uint64
	for b, c := range h {
		if c == 0 {
			continue
		}
		if seen+c >= rank {
			lo, hi := bucketBounds(b)
			return lo + (hi-lo)*(float64(rank-seen)-0.5)/float64(c)
		}
		seen += c
	}
	return 0
}

// Max is the upper bound of the highest occupied bucket, µs.
func (h Histogram) Max() float64 {
	for b := len(h) - 1; b >= 0; b-- {
		if h[b] != 0 {
			_, hi := bucketBounds(b)
			return hi
		}
	}
	return 0
}
