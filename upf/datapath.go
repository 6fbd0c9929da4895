package upf

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tern5g/tern/upf/rules"
	"github.com/tern5g/tern/upf/upfc"
	"github.com/tern5g/tern/upf/upfu"
	"github.com/tern5g/tern/upf/xdp"
)

// The data path UPF-C programs. Every driver executes the same compiled
// sessions (rules.Session) behind one interface, upfc.DataPath (install or
// replace a session's snapshot, remove it; buffering starts and stops with
// the FARs of the snapshot) with upfc.UsageFlusher (usage counted outside
// rules.Counters is added in before UPF-C reads it):
//
//   - portable and afxdp: the user-space pipeline (upf/upfu) executes
//     everything; the drivers only move its packets.
//   - xdp: an offload (upf/xdp) executes in the kernel the sessions whose
//     rules its program can evaluate exactly, and passes every other
//     packet up to the pipeline, which holds every session, so that the
//     host path is complete whatever the offload declines.
//
// dataPath is that interface's one implementation: it always installs
// into the pipeline and, while an offload is attached, into the offload
// too, keeping the pipeline's ordering promises for the offload's packets.

// offload is a fast path in front of the pipeline (upf/xdp.FastPath).
type offload interface {
	// Prepare readies the offload for s replacing the session's current
	// snapshot: where the pipeline must send End Markers after the last
	// packet on an old tunnel, or promises that nothing more goes to a
	// tunnel the session stops forwarding to, the offload withdraws the
	// session and waits out its packets in flight.
	Prepare(s *rules.Session)
	// Install executes s in the fast path if it can and reports whether
	// it does; a session it cannot execute is withdrawn from it.
	Install(s *rules.Session) bool
	// Remove withdraws a session, adding its last counts in.
	Remove(seid uint64)
	// Sync adds the usage counted since the last Sync to the sessions'
	// rules.Counters and returns the usage reports that calls for;
	// SyncSession does it for one session.
	Sync() []xdp.Report
	SyncSession(seid uint64) []xdp.Report
}

type dataPath struct {
	pipe    *upfu.Pipeline
	shaping bool // Config.ShapingDelay: MBRs are shaped in the pipeline
	log     *slog.Logger

	report func(seid uint64, r rules.Report) // UPF-C's Report

	mu        sync.Mutex
	fast      offload                   // nil: none attached
	sessions  map[uint64]*rules.Session // the installed snapshots
	offloaded map[uint64]bool           // the sessions fast executes
}

var (
	_ upfc.DataPath     = (*dataPath)(nil)
	_ upfc.UsageFlusher = (*dataPath)(nil)
)

func newDataPath(pipe *upfu.Pipeline, shaping bool, log *slog.Logger) *dataPath {
	return &dataPath{pipe: pipe, shaping: shaping, log: log,
		sessions: make(map[uint64]*rules.Session), offloaded: make(map[uint64]bool)}
}

// Install implements upfc.DataPath.
func (d *dataPath) Install(s *rules.Session) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sessions[s.SEID] = s
	if d.fast == nil {
		d.pipe.Install(s)
		return
	}
	// The pipeline's Install promises that when it returns no packet is
	// still on its way to a tunnel the session stopped forwarding to,
	// and that an End Marker follows the last packet on an old tunnel
	// (upfu.Pipeline.Install); Prepare keeps those promises for the
	// offload's packets.
	d.fast.Prepare(s)
	d.pipe.Install(s)
	// After the pipeline's Install: a buffer it drains goes out before
	// the offload forwards anything newer.
	d.offloaded[s.SEID] = d.offloadable(s) && d.fast.Install(s)
}

// Remove implements upfc.DataPath.
func (d *dataPath) Remove(seid uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sessions, seid)
	if d.fast != nil && d.offloaded[seid] {
		d.fast.Remove(seid) // adds the session's last counts in
	}
	delete(d.offloaded, seid)
	d.pipe.Remove(seid)
}

// FlushUsage implements upfc.UsageFlusher: UPF-C is about to report on
// seid, so only its counters are read. It does not hold d.mu while the
// offload reads them, so installs go on meanwhile.
func (d *dataPath) FlushUsage(seid uint64) {
	if fast := d.offload(); fast != nil {
		d.raise(fast.SyncSession(seid))
	}
}

// flushAll adds in every session's usage (syncEvery).
func (d *dataPath) flushAll() {
	if fast := d.offload(); fast != nil {
		d.raise(fast.Sync())
	}
}

func (d *dataPath) offload() offload {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fast
}

// raise passes the offload's usage reports to UPF-C.
func (d *dataPath) raise(rs []xdp.Report) {
	for _, r := range rs {
		d.report(r.SEID, r.Report)
	}
}

// offloadable reports whether s may go to the offload: its own program
// decides what it can evaluate (Install's result), but shaping and
// volume quotas stay in the pipeline, which holds the packets that wait
// and stops at the exact byte.
func (d *dataPath) offloadable(s *rules.Session) bool {
	for _, p := range s.PDRs {
		for _, u := range p.URRs {
			if u.HasQuota() {
				return false
			}
		}
		if d.shaping {
			for _, q := range p.QERs {
				if q.MBRUL != nil || q.MBRDL != nil {
					return false
				}
			}
		}
	}
	return true
}

// attach puts the offload in front of the pipeline and gives it the
// sessions installed so far.
func (d *dataPath) attach(fast offload) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fast = fast
	for seid, s := range d.sessions {
		if d.offloadable(s) {
			d.offloaded[seid] = fast.Install(s)
		}
	}
}

// detach withdraws every session from the offload (their usage added in)
// and leaves the pipeline alone in charge.
func (d *dataPath) detach() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fast == nil {
		return
	}
	for seid, on := range d.offloaded {
		if on {
			d.fast.Remove(seid)
		}
	}
	clear(d.offloaded)
	d.fast = nil
}

// syncEvery adds the offload's counts in every interval until ctx ends,
// so that volume thresholds are noticed within about an interval; or
// every ten times as long as adding them in took, so that it costs at
// most a tenth of a CPU (the xdp driver reads 100,000 sessions' counters
// in ~5 ms, upf/xdp BenchmarkSync, so the interval holds there).
func (d *dataPath) syncEvery(ctx context.Context, interval time.Duration) {
	wait := interval
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		start := time.Now()
		d.flushAll()
		wait = max(interval, 10*time.Since(start))
	}
}
