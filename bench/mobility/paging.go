package mobility

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tern5g/tern/internal/poll"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim/ue"
)

// PagingConfig is the paging experiment.
type PagingConfig struct {
	Setup
	// Concurrency lists how many UEs are paged at once in the concurrent
	// runs (L25GC+: 4, 8, 16, 32, 64), each run Rounds times (default 20).
	Concurrency []int
	Rounds      int
}

// Setup is what every experiment has: the downlink stream, how many
// trials, where progress goes.
type Setup struct {
	// PPS and Size shape the downlink stream (default 10,000 packets/s of
	// 64 bytes, as L25GC's).
	PPS, Size int
	// Trials is how many times the procedure runs (default 20): pagings of
	// one UE, handovers per mode.
	Trials int
	// GNBReadBuffer is the simulated gNBs' N3 socket receive buffer in
	// bytes (default DefaultGNBReadBuffer); a small one makes the kernel
	// drop stream packets there, which the loss attribution shows.
	GNBReadBuffer int
	Log           Logger
}

// Logger is what the experiments print progress to (nil: nothing).
type Logger func(format string, args ...any)

func (c *Setup) defaults() {
	if c.PPS <= 0 {
		c.PPS = 10000
	}
	if c.Size <= 0 {
		c.Size = 64
	}
	if c.Trials <= 0 {
		c.Trials = 20
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
}

// check refuses a stream payload too small for the stream's header.
func (c *Setup) check() error {
	if c.Size < payloadHeader {
		return fmt.Errorf("mobility: stream packets of %d bytes cannot hold the %d-byte sequence and timestamp header", c.Size, payloadHeader)
	}
	return nil
}

func (c *PagingConfig) defaults() {
	c.Setup.defaults()
	if c.Rounds <= 0 {
		c.Rounds = 20
	}
}

// PagingResult is what the experiment measured.
type PagingResult struct {
	PPS int // the stream's rate
	// Unit is the paging window of each trial (the gNB receives Paging ->
	// it sends the Initial Context Setup Response).
	Unit []time.Duration
	// Full is, per trial, the first downlink packet handed to the UPF while
	// the UE is idle (the one it buffers and reports) -> that packet
	// reaching the UE, drained from the buffer: what the user feels.
	Full []time.Duration
	// Baseline is the stream's median one-way delay with the UE connected
	// and nothing happening: the reference, measured in the same run.
	Baseline time.Duration
	// DL counts the stream's packets over every trial's window, from the
	// moment the UE is idle to 50 ms after it is back; Loss says where the
	// lost ones went.
	DL   Window
	Loss Loss
	// Threshold is the delay above which a packet counts as delayed.
	Threshold time.Duration
	// Trace is the first trial's per-packet delays (for the plot), with
	// the instants (stream clock, ns) the trial began and the UE was back.
	Trace         []Delay
	TraceStart    int64
	TraceConnectd int64
	// Concurrent is, per number of UEs, the time each round took from
	// handing one downlink packet for each idle UE to the UPF to the last
	// of those packets reaching its UE.
	Concurrent map[int][]time.Duration
	Failures   int
}

// Paging runs the experiment: the single-UE trials, then the concurrent
// runs, each on a core of its own.
func Paging(ctx context.Context, c PagingConfig) (*PagingResult, error) {
	c.defaults()
	if err := c.Setup.check(); err != nil {
		return nil, err
	}
	res := &PagingResult{PPS: c.PPS, Concurrent: map[int][]time.Duration{}}
	if err := pagingTrials(ctx, c, res); err != nil {
		return nil, err
	}
	for _, n := range c.Concurrency {
		if err := pagingConcurrent(ctx, c, n, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// goIdle releases bu to CM-IDLE and waits until its user plane is
// deactivated at the SMF (the UPF buffers from then on).
func (b *bed) goIdle(ctx context.Context, bus ...*benchUE) error {
	before := b.core.SMF.Stats().Deactivations
	var wg sync.WaitGroup
	errs := make([]error, len(bus))
	for i, bu := range bus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = bu.u.Release(ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("release to CM-IDLE: %w", err)
		}
	}
	return poll.Until(ctx, 5*time.Second, 100*time.Microsecond, func() bool {
		return b.core.SMF.Stats().Deactivations >= before+uint64(len(bus))
	})
}

func pagingTrials(ctx context.Context, c PagingConfig, res *PagingResult) error {
	b, err := newBed(ctx, bedConfig{UEs: 1, GNBs: 1, N3ReadBuffer: c.GNBReadBuffer})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.connect(ctx, c.PPS, c.Size); err != nil {
		return err
	}
	bu := b.ues[0]
	s := bu.stream
	res.Baseline, res.Threshold = measureBaseline(ctx, s)
	c.Log("paging: baseline one-way delay %v at %d pps; delayed means above %v", res.Baseline, c.PPS, res.Threshold)

	for trial := range c.Trials {
		if err := b.goIdle(ctx, bu); err != nil {
			res.Failures++
			return fmt.Errorf("paging trial %d: %w", trial, err)
		}
		counters := b.lossCounters(bu)
		start := s.Mark()
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); s.Run(sctx) }()
		var sentNs, recvNs int64
		err := poll.Until(ctx, 10*time.Second, 100*time.Microsecond, func() bool {
			var ok bool
			sentNs, recvNs, ok = s.FirstAfter(start)
			return ok
		})
		if err != nil {
			stop()
			<-done
			res.Failures++
			c.Log("paging trial %d: the UE never got its downlink: %v", trial, err)
			continue
		}
		back := s.Mark()
		time.Sleep(50 * time.Millisecond)
		stop()
		<-done
		end := s.Mark()
		time.Sleep(20 * time.Millisecond) // in-flight packets land
		w, loss := b.attributeLoss(ctx, bu, counters, s.Analyze(start, end, res.Threshold), start, end, res.Threshold)
		res.Loss.add(loss)
		res.DL.Sent += w.Sent
		res.DL.Received += w.Received
		res.DL.Lost += w.Lost
		res.DL.Late += w.Late
		res.DL.Reordered += w.Reordered
		res.DL.Delayed += w.Delayed
		res.Full = append(res.Full, time.Duration(recvNs-sentNs))
		if trial == 0 {
			res.Trace, res.TraceStart, res.TraceConnectd = w.Delays, start, back
		}
	}
	res.Unit = b.rec.Samples(ue.ProcPaging)
	res.Failures += b.rec.Summary(ue.ProcPaging).Failures
	c.Log("paging: %d trials, unit window median %v, full median %v", c.Trials, median(res.Unit), median(res.Full))
	return nil
}

// pagingConcurrent pages n idle UEs at once, Rounds times.
func pagingConcurrent(ctx context.Context, c PagingConfig, n int, res *PagingResult) error {
	b, err := newBed(ctx, bedConfig{UEs: n, GNBs: 1, N3ReadBuffer: c.GNBReadBuffer})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.connect(ctx, c.PPS, c.Size); err != nil {
		return err
	}
	for round := range c.Rounds {
		if err := b.goIdle(ctx, b.ues...); err != nil {
			return fmt.Errorf("paging %d UEs, round %d: %w", n, round, err)
		}
		marks := make([]int64, n)
		pkts := make([][]byte, n)
		for i, bu := range b.ues {
			marks[i] = bu.stream.Mark()
			pkts[i] = bu.stream.packet()
		}
		t0 := time.Now()
		if err := b.core.UPF.InjectDownlink(pkts...); err != nil {
			return err
		}
		err := poll.Until(ctx, 10*time.Second, 100*time.Microsecond, func() bool {
			for i, bu := range b.ues {
				if _, _, ok := bu.stream.FirstAfter(marks[i]); !ok {
					return false
				}
			}
			return true
		})
		if err != nil {
			res.Failures++
			c.Log("paging %d UEs, round %d: not every UE got its downlink: %v", n, round, err)
			continue
		}
		// The last arrival's own instant (each stream has its clock), not
		// the poll's.
		var latest int64
		for i, bu := range b.ues {
			_, recv, _ := bu.stream.FirstAfter(marks[i])
			latest = max(latest, recv-int64(t0.Sub(bu.stream.epoch)))
		}
		res.Concurrent[n] = append(res.Concurrent[n], time.Duration(latest))
	}
	c.Log("paging %d UEs at once: median %v over %d rounds", n, median(res.Concurrent[n]), len(res.Concurrent[n]))
	return nil
}

// measureBaseline runs the stream for 200 ms with the UE connected and
// nothing happening: the reference every experiment quotes. It returns
// the median one-way delay and the threshold above which a packet counts
// as delayed (twice the p99, at least the median + 200 µs).
func measureBaseline(ctx context.Context, s *Stream) (baseline, threshold time.Duration) {
	runFor(ctx, s, 200*time.Millisecond)
	from, to := s.Mark()-int64(150*time.Millisecond), s.Mark()-int64(10*time.Millisecond)
	baseline = s.Baseline(from, to)
	p99 := quantileDelay(s.Analyze(from, to, time.Hour).Delays, 0.99)
	return baseline, max(2*p99, baseline+200*time.Microsecond)
}

// runFor runs the stream for d.
func runFor(ctx context.Context, s *Stream, d time.Duration) {
	sctx, stop := context.WithTimeout(ctx, d)
	defer stop()
	s.Run(sctx)
}

func quantileDelay(ds []Delay, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	v := make([]time.Duration, len(ds))
	for i, d := range ds {
		v[i] = d.Delay
	}
	slices.Sort(v)
	return v[min(len(v)-1, int(q*float64(len(v))))]
}

// median is the median the tables and the JSON give (report.Summarize's,
// the nearest rank): the progress lines must show the same figure for a
// window (issue 37: with 2 trials the lines gave the upper sample, the
// table the lower).
func median(ds []time.Duration) time.Duration {
	v := slices.Clone(ds)
	slices.Sort(v)
	return report.Quantile(v, 0.5)
}
