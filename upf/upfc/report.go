package upfc

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// reportQueue holds reports from UPF-U until a sender goroutine turns them
// into Session Report Requests. The sender runs only while there is work,
// one at a time, so reports leave in the order they were raised.
type reportQueue struct {
	mu      sync.Mutex
	items   []queuedReport
	spare   []queuedReport
	running bool

	sent, failed, dropped uint64
	nodeSent, nodeFailed  uint64
}

type queuedReport struct {
	seid uint64
	r    rules.Report
	at   time.Time
	// A path event instead of a session report: the GTP-U peer whose
	// path failed, or recovered.
	path      bool
	peer      netip.Addr
	recovered bool
	// periodic: a periodic usage report (PERIO) of the URR with this
	// reporting state, due at at.
	periodic *urrTrack
}

func (q *reportQueue) counts() (sent, failed, dropped, nodeSent, nodeFailed uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sent, q.failed, q.dropped, q.nodeSent, q.nodeFailed
}

func (q *reportQueue) count(p *uint64) {
	q.mu.Lock()
	*p++
	q.mu.Unlock()
}

// Report is called by UPF-U for a downlink data notification (first packet
// buffered by a FAR with NOCP) or a URR threshold crossing. It only queues
// the report and returns: the Session Report Request (TS 29.244 §6.3.5,
// §7.5.8) is sent asynchronously to the session's CP function, so the data
// path never waits for N4. When the queue is full the report is dropped
// and counted.
func (c *UPFC) Report(seid uint64, r rules.Report) {
	c.enqueue(queuedReport{seid: seid, r: r, at: time.Now()})
}

// PathFailure implements upfu.PathReporter: path supervision found the
// GTP-U path to peer broken (TS 23.007 §20.3.1). Every associated CP
// function gets a Node Report Request with a User Plane Path Failure
// Report naming the peer (TS 29.244 §6.2.9.2, §7.4.5.1-2), since each may
// have sessions whose tunnels end there.
func (c *UPFC) PathFailure(peer netip.Addr) {
	c.enqueue(queuedReport{path: true, peer: peer, at: time.Now()})
}

// PathRecovery implements upfu.PathReporter: the peer of a failed path
// answers again; the CP functions get a User Plane Path Recovery Report
// (§7.4.5.1-3).
func (c *UPFC) PathRecovery(peer netip.Addr) {
	c.enqueue(queuedReport{path: true, peer: peer, recovered: true, at: time.Now()})
}

// enqueue queues a report for the sender; a full queue drops it (counted).
func (c *UPFC) enqueue(it queuedReport) {
	q := &c.reports
	q.mu.Lock()
	if len(q.items) >= c.cfg.ReportQueue {
		q.dropped++
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, it)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go c.sendReports()
	}
}

func (c *UPFC) sendReports() {
	q := &c.reports
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		batch := q.items
		q.items, q.spare = q.spare[:0], nil
		q.mu.Unlock()

		for i := range batch {
			c.sendReport(&batch[i])
		}

		clear(batch)
		q.mu.Lock()
		q.spare = batch[:0]
		q.mu.Unlock()
	}
}

func (c *UPFC) sendReport(it *queuedReport) {
	q := &c.reports
	if it.path {
		c.sendNodeReports(it)
		return
	}
	c.mu.Lock()
	if c.detached(it.seid) {
		// A restored association not attached yet: the report waits
		// for Attach (a Downlink Data Report dropped here would not come
		// again while the buffer holds packets).
		held := len(c.held) < c.cfg.ReportQueue
		if held {
			c.held = append(c.held, *it)
		}
		c.mu.Unlock()
		if !held {
			q.count(&q.dropped)
		}
		return
	}
	// Building the report is a step (it moves the URR's measurement on):
	// its records are out before the report leaves.
	c.beginStep()
	cp, cpSEID, req := c.buildReport(it)
	c.endStep()
	c.mu.Unlock()
	if req == nil {
		q.count(&q.dropped)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReportTimeout)
	resp, err := cp.ReportSession(ctx, cpSEID, req)
	cancel()
	switch {
	case err != nil:
		c.log.Warn("PFCP session report failed", "seid", it.seid, "err", err)
		q.count(&q.failed)
	case !resp.Cause.Accepted():
		c.log.Warn("PFCP session report rejected", "seid", it.seid, "cause", resp.Cause)
		q.count(&q.failed)
	default:
		q.count(&q.sent)
	}
}

// sendNodeReports sends a path event's Node Report Request to every
// associated CP function.
func (c *UPFC) sendNodeReports(it *queuedReport) {
	q := &c.reports
	req := &pfcp.NodeReportRequest{NodeID: c.cfg.NodeID, ReportType: pfcp.NodeReportUPFR, PathFailurePeers: []netip.Addr{it.peer}}
	if it.recovered {
		req = &pfcp.NodeReportRequest{NodeID: c.cfg.NodeID, ReportType: pfcp.NodeReportUPRR, PathRecoveryPeers: []netip.Addr{it.peer}}
	}
	c.mu.Lock()
	cps := make(map[string]pfcp.ControlPlane, len(c.assocs))
	for key, a := range c.assocs {
		if a.cp != nil {
			cps[key] = a.cp
		}
	}
	c.mu.Unlock()
	for key, cp := range cps {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReportTimeout)
		resp, err := cp.ReportNode(ctx, req)
		cancel()
		switch {
		case err != nil:
			c.log.Warn("PFCP node report failed", "node", key, "peer", it.peer, "err", err)
			q.count(&q.nodeFailed)
		case !resp.Cause.Accepted():
			c.log.Warn("PFCP node report rejected", "node", key, "peer", it.peer, "cause", resp.Cause)
			q.count(&q.nodeFailed)
		default:
			q.count(&q.nodeSent)
		}
	}
}

// buildReport turns a queued report into a Session Report Request for the
// session's CP function, or returns a nil request when the report is stale
// (session, rule or association gone). c.mu held.
func (c *UPFC) buildReport(it *queuedReport) (pfcp.ControlPlane, uint64, *pfcp.SessionReportRequest) {
	s := c.sessions[it.seid]
	if s == nil {
		return nil, 0, nil
	}
	a := c.assocs[s.assoc]
	if a == nil || a.cp == nil {
		return nil, 0, nil
	}
	r := &it.r
	var req *pfcp.SessionReportRequest
	if it.periodic != nil {
		// §5.2.2.2.1 periodic reporting: the usage of the period.
		u := s.urrByTrack(it.periodic)
		if u == nil {
			return nil, 0, nil
		}
		c.flushUsage(s.seid)
		ur := u.report(u.counters.Load(), pfcp.UsageTriggerPeriodic, it.at)
		c.touched(s.seid)
		c.rebaseIfLimited(s, u)
		return a.cp, s.cpSEID, &pfcp.SessionReportRequest{ReportType: pfcp.ReportUSAR, UsageReports: []pfcp.UsageReport{ur}}
	}
	switch r.Kind {
	case rules.ReportDownlinkData:
		if s.pdrs[r.PDRID] == nil {
			return nil, 0, nil
		}
		// §7.5.8.2 Downlink Data Report: the PDR that buffered and, in the
		// Downlink Data Service Information, the packet's QFI.
		dd := &pfcp.DownlinkDataReport{PDRIDs: []uint16{r.PDRID}}
		if r.QFI != 0 {
			dd.QFIs = []uint8{r.QFI}
		}
		req = &pfcp.SessionReportRequest{ReportType: pfcp.ReportDLDR, DownlinkDataReport: dd}
	case rules.ReportUsage:
		u := s.urrs[r.URRID]
		if u == nil {
			return nil, 0, nil
		}
		var trigger uint32
		if r.Usage&rules.UsageVolumeThreshold != 0 && u.spec.Triggers&pfcp.TriggerVolumeThreshold != 0 {
			trigger |= pfcp.UsageTriggerVolumeThreshold
		}
		if r.Usage&rules.UsageVolumeQuota != 0 {
			// §5.2.2.2.1: the quota is used up; the PDRs' packets stay
			// dropped (whatever later reports do to the measurement)
			// until the CP function grants a new quota.
			if !u.track.quotaSpent {
				u.track.quotaSpent = true
				c.touched(s.seid)
			}
			if u.spec.Triggers&pfcp.TriggerVolumeQuota != 0 {
				trigger |= pfcp.UsageTriggerVolumeQuota
			}
		}
		if trigger == 0 {
			c.rebaseIfLimited(s, u)
			return nil, 0, nil
		}
		// §7.5.8.3 Usage Report with the volume measured at the crossing.
		use := rules.Usage{Volume: r.Volume, ULPackets: r.ULPackets, DLPackets: r.DLPackets}
		ur := u.report(use, trigger, it.at)
		c.touched(s.seid)
		c.rebaseIfLimited(s, u)
		req = &pfcp.SessionReportRequest{ReportType: pfcp.ReportUSAR, UsageReports: []pfcp.UsageReport{ur}}
	case rules.ReportErrorIndication:
		// §5.10: an Error Indication Report with the remote F-TEID. The
		// first report of a tunnel stops it; the Error Indications that
		// follow for it find no forwarding FAR and are stale.
		if !c.stopTunnel(s, r.RemotePeer, r.RemoteTEID) {
			return nil, 0, nil
		}
		req = &pfcp.SessionReportRequest{ReportType: pfcp.ReportERIR, ErrorIndicationReport: &pfcp.ErrorIndicationReport{
			RemoteFTEIDs: []pfcp.FTEID{{TEID: r.RemoteTEID, IPv4: r.RemotePeer}}}}
	default:
		c.log.Warn("unknown report kind from the data path", "seid", it.seid, "kind", r.Kind)
		return nil, 0, nil
	}
	return a.cp, s.cpSEID, req
}

// stopTunnel turns the FARs of s that forward to the tunnel (peer, teid)
// from forwarding to buffering, and reports whether there were any. The
// peer has no context for the tunnel (TS 29.281 §7.3.1), so what the FAR
// sends there is lost; buffered instead, downlink data waits for the SMF,
// which deactivates the user plane (buffer and notify, TS 23.527 §5,
// Error Indication step 4) and later points the FAR at a new tunnel,
// which drains the buffer in order (TS 23.502 §4.2.3.3 step 12). This is
// the gateway's own reaction of TS 23.007 §21 (stop sending to the
// disowned tunnel, keep the context), done locally so that packets stop
// at once rather than a PFCP round trip later. c.mu held.
func (c *UPFC) stopTunnel(s *session, peer netip.Addr, teid uint32) bool {
	n := s.clone()
	hit := false
	for id, f := range s.fars {
		fw := f.spec.Forwarding
		if f.spec.ApplyAction&pfcp.ActionForward == 0 || fw == nil || fw.OuterHeaderCreation == nil {
			continue
		}
		if o := fw.OuterHeaderCreation; o.TEID != teid || o.IPv4.Unmap() != peer {
			continue
		}
		spec := cloneFAR(&f.spec)
		spec.ApplyAction = spec.ApplyAction&^pfcp.ActionForward | pfcp.ActionBuffer
		n.fars[id] = &farState{spec: spec}
		hit = true
	}
	if !hit {
		return false
	}
	snap, rej := c.compile(n, nil)
	if rej != nil {
		c.log.Error("upfc: session with a stopped tunnel does not compile: left forwarding", "seid", s.seid, "err", rej)
		return false
	}
	n.snapshot = snap
	c.commit(s, n)
	c.log.Info("GTP-U Error Indication: FAR buffers instead of forwarding", "seid", s.seid, "peer", peer, "teid", teid)
	return true
}

// urrByTrack is the URR of s with reporting state t (nil: gone).
func (s *session) urrByTrack(t *urrTrack) *urrState {
	for _, u := range s.urrs {
		if u.track == t {
			return u
		}
	}
	return nil
}

// rebaseIfLimited recompiles s after a report moved the measurement of u,
// if u has a threshold or quota: the data path holds them as counter
// values (urrTrack). c.mu held.
func (c *UPFC) rebaseIfLimited(s *session, u *urrState) {
	if u.spec.VolumeQuota != nil || (u.spec.VolumeThreshold != nil && u.spec.Triggers&pfcp.TriggerVolumeThreshold != 0) {
		c.rebase(s)
	}
}

// rebase installs a new snapshot of s compiled from its current state.
// c.mu held.
func (c *UPFC) rebase(s *session) {
	n := s.clone()
	snap, rej := c.compile(n, nil)
	if rej != nil {
		// It compiled when it was committed, and rebasing changes only
		// counter values.
		c.log.Error("upfc: session does not recompile: its thresholds keep their old start", "seid", s.seid, "err", rej)
		return
	}
	n.snapshot = snap
	c.commit(s, n)
}

// armPeriodic starts, moves or stops the periodic reporting timers of s's
// URRs to match their specs, and stops those of old's URRs that s no
// longer has (§5.2.2.2.1 PERIO with the Measurement Period). c.mu held.
func (c *UPFC) armPeriodic(old, s *session) {
	if old != nil {
		for id, u := range old.urrs {
			if s == nil || s.urrs[id] == nil || s.urrs[id].track != u.track {
				u.track.stop()
			}
		}
	}
	if s == nil {
		return
	}
	seid := s.seid
	for _, u := range s.urrs {
		var want time.Duration
		if u.spec.Triggers&pfcp.TriggerPeriodic != 0 {
			want = u.spec.MeasurementPeriod
		}
		t := u.track
		if t.period == want && (want <= 0 || t.timer != nil) {
			continue
		}
		if t.period != want {
			t.stop()
			if want <= 0 {
				continue
			}
			t.period = want
			t.due = time.Now().Add(want)
		}
		// A new period, or a restored one (record.go): what is left of it;
		// an elapsed deadline fires at once.
		t.timer = time.AfterFunc(time.Until(t.due), func() { c.periodicDue(seid, t) })
	}
}

// periodicDue queues the periodic report of the URR with state t and
// starts its next period.
func (c *UPFC) periodicDue(seid uint64, t *urrTrack) {
	c.mu.Lock()
	if t.period == 0 {
		c.mu.Unlock()
		return // stopped meanwhile
	}
	if d := time.Until(t.due); d > 0 {
		// Early by the wall clock (a restored deadline), or Attach
		// raised this report while the timer fired: wait for the due.
		t.timer.Reset(d)
		c.mu.Unlock()
		return
	}
	if s := c.sessions[seid]; s == nil || c.assocs[s.assoc] == nil || c.assocs[s.assoc].cp == nil {
		// A restored association not attached yet: the report stays
		// due, and Attach raises it (dueReports).
		c.mu.Unlock()
		return
	}
	now := time.Now()
	c.beginStep()
	c.nextPeriod(seid, t, now)
	c.endStep()
	c.mu.Unlock()
	c.enqueue(queuedReport{seid: seid, periodic: t, at: now})
}

// nextPeriod starts the next period of t, a URR of session seid: a step's
// change, since the deadline is part of the URR's record. c.mu held.
func (c *UPFC) nextPeriod(seid uint64, t *urrTrack, now time.Time) {
	t.due = now.Add(t.period)
	t.timer.Reset(t.period)
	c.touched(seid)
}

// stop ends periodic reporting. c.mu held.
func (t *urrTrack) stop() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.period = 0
	t.due = time.Time{}
}
