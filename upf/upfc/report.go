package upfc

import (
	"context"
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
}

type queuedReport struct {
	seid uint64
	r    rules.Report
	at   time.Time
}

func (q *reportQueue) counts() (sent, failed, dropped uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sent, q.failed, q.dropped
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
	q := &c.reports
	q.mu.Lock()
	if len(q.items) >= c.cfg.ReportQueue {
		q.dropped++
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, queuedReport{seid: seid, r: r, at: time.Now()})
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
	c.mu.Lock()
	cp, cpSEID, req := c.buildReport(it)
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
		// §7.5.8.3 Usage Report with the volume measured at the crossing.
		use := rules.Usage{Volume: r.Volume, ULPackets: r.ULPackets, DLPackets: r.DLPackets}
		ur := u.report(use, pfcp.UsageTriggerVolumeThreshold, it.at)
		req = &pfcp.SessionReportRequest{ReportType: pfcp.ReportUSAR, UsageReports: []pfcp.UsageReport{ur}}
	default:
		c.log.Warn("unknown report kind from the data path", "seid", it.seid, "kind", r.Kind)
		return nil, 0, nil
	}
	return a.cp, s.cpSEID, req
}
