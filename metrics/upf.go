package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tern5g/tern/upf"
	"github.com/tern5g/tern/upf/upfu"
)

var upfStats = []stat[upf.Stats]{
	gauge("upf", "buffered_packets", "Downlink packets held in session buffers now.", func(s *upf.Stats) float64 { return u(s.Pipeline.Buffered) }),
	gauge("upf", "buffered_bytes", "Downlink bytes held in session buffers now (the global cap applies to these).", func(s *upf.Stats) float64 { return u(s.Pipeline.BufferedBytes) }),
	gauge("upf", "datapath_sessions", "Sessions installed in the data path.", func(s *upf.Stats) float64 { return u(s.Pipeline.Sessions) }),
	gauge("upf", "gtpu_paths_supervised", "GTP-U peers under path supervision (Echo).", func(s *upf.Stats) float64 { return u(s.Pipeline.PathsSupervised) }),
	gauge("upf", "gtpu_paths_up", "Supervised GTP-U peers whose path is up.", func(s *upf.Stats) float64 { return u(s.Pipeline.PathsUp) }),
	gauge("upf", "pfcp_associations", "PFCP associations with CP functions.", func(s *upf.Stats) float64 { return u(s.Control.Associations) }),
	gauge("upf", "pfcp_sessions", "PFCP sessions held by UPF-C.", func(s *upf.Stats) float64 { return u(s.Control.Sessions) }),
	gauge("upf", "teids", "Local F-TEIDs allocated.", func(s *upf.Stats) float64 { return u(s.Control.TEIDs) }),
	counter("upf", "pfcp_sessions_restored_total", "PFCP sessions established with RESTI: an SMF restoring what a restart lost.", func(s *upf.Stats) float64 { return u(s.Control.Restored) }),

	counter("upf", "buffered_packets_total", "Downlink packets ever buffered.", func(s *upf.Stats) float64 { return u(s.Pipeline.BufferedTotal) }),
	counter("upf", "gtpu_echo_replies_total", "GTP-U Echo Responses sent.", func(s *upf.Stats) float64 { return u(s.Pipeline.EchoReplies) }),
	counter("upf", "gtpu_echo_requests_sent_total", "GTP-U Echo Requests sent for path supervision (retransmissions included).", func(s *upf.Stats) float64 { return u(s.Pipeline.EchoRequestsSent) }),
	counter("upf", "gtpu_echo_responses_unmatched_total", "GTP-U Echo Responses that matched no outstanding request.", func(s *upf.Stats) float64 { return u(s.Pipeline.EchoResponsesUnmatched) }),
	counter("upf", "gtpu_echo_responses_dropped_total", "GTP-U Echo Responses dropped: the supervisor's queue was full.", func(s *upf.Stats) float64 { return u(s.Pipeline.EchoResponsesDropped) }),
	counter("upf", "gtpu_path_failures_total", "GTP-U path failures declared.", func(s *upf.Stats) float64 { return u(s.Pipeline.PathFailures) }),
	counter("upf", "gtpu_error_indications_sent_total", "GTP-U Error Indications sent.", func(s *upf.Stats) float64 { return u(s.Pipeline.ErrorIndicationsSent) }),
	counter("upf", "gtpu_error_indications_received_total", "GTP-U Error Indications received.", func(s *upf.Stats) float64 { return u(s.Pipeline.ErrorIndicationsReceived) }),
	counter("upf", "end_markers_received_total", "GTP-U End Markers received.", func(s *upf.Stats) float64 { return u(s.Pipeline.EndMarkers) }),
	counter("upf", "end_markers_relayed_total", "GTP-U End Markers passed on along a forwarding tunnel.", func(s *upf.Stats) float64 { return u(s.Pipeline.EndMarkersRelayed) }),
	counter("upf", "end_markers_sent_total", "GTP-U End Markers sent on old tunnels.", func(s *upf.Stats) float64 { return u(s.Pipeline.EndMarkersSent) }),
	counter("upf", "datapath_reports_dropped_total", "Reports from the data path to UPF-C dropped (queue full).", func(s *upf.Stats) float64 { return u(s.Pipeline.ReportsDropped) }),
}

var (
	upfForwardedPackets = desc("upf", "forwarded_packets_total", "Packets forwarded, by direction (uplink: N3 to N6 or N9, downlink: to N3).", "direction")
	upfForwardedBytes   = desc("upf", "forwarded_bytes_total", "Bytes forwarded, by direction.", "direction")
	upfPackets          = desc("upf", "packets_total", "Packets through the UPF's sockets and devices, by interface (n3, n6) and direction (rx, tx).", "interface", "direction")
	upfIOErrors         = desc("upf", "io_errors_total", "N3/N6 socket and device errors, by direction (rx, tx).", "direction")
	upfDrops            = desc("upf", "drops_total", "Packets dropped, by reason.", "reason")
	upfRules            = desc("upf", "rules", "Rules installed by PFCP, by type (pdr, far, qer, urr, bar): the classifier's rule count is the PDRs.", "type")
	upfSessionReports   = desc("upf", "session_reports_total", "PFCP Session Report Requests, by result: sent (accepted), failed (error or rejection), dropped (queue full, or the session was gone).", "result")
	upfNodeReports      = desc("upf", "node_reports_total", "PFCP Node Report Requests (path failure or recovery), by result: sent (accepted), failed.", "result")
)

// upfCollector reads a UPF's counters at scrape time.
type upfCollector struct{ u *upf.UPF }

func (uc upfCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, upfStats)
	for _, d := range []*prometheus.Desc{upfForwardedPackets, upfForwardedBytes, upfPackets, upfIOErrors, upfDrops, upfRules, upfSessionReports, upfNodeReports} {
		ch <- d
	}
}

func (uc upfCollector) Collect(ch chan<- prometheus.Metric) {
	st := uc.u.Stats()
	collect(ch, upfStats, &st)
	c := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	p, d, cp := &st.Pipeline, &st.Driver, &st.Control
	c(upfForwardedPackets, u(p.ULPackets), "uplink")
	c(upfForwardedPackets, u(p.DLPackets), "downlink")
	c(upfForwardedBytes, u(p.ULBytes), "uplink")
	c(upfForwardedBytes, u(p.DLBytes), "downlink")
	c(upfPackets, u(d.N3Rx), "n3", "rx")
	c(upfPackets, u(d.N3Tx), "n3", "tx")
	c(upfPackets, u(d.N6Rx), "n6", "rx")
	c(upfPackets, u(d.N6Tx), "n6", "tx")
	c(upfIOErrors, u(d.RxErrors), "rx")
	c(upfIOErrors, u(d.TxErrors), "tx")
	// Every reason has a series from the start (a rate over a series that
	// appears with its first drop misses that drop); reasons only the
	// snapshot knows (drain-no-sink) come when they count.
	for r := range upfu.NumDropReasons {
		c(upfDrops, u(p.Drops[r.String()]), r.String())
	}
	for reason, n := range p.Drops {
		if !knownDropReason(reason) {
			c(upfDrops, u(n), reason)
		}
	}
	c(upfSessionReports, u(cp.ReportsSent), "sent")
	c(upfSessionReports, u(cp.ReportsFailed), "failed")
	c(upfSessionReports, u(cp.ReportsDropped), "dropped")
	c(upfNodeReports, u(cp.NodeReportsSent), "sent")
	c(upfNodeReports, u(cp.NodeReportsFailed), "failed")
	for _, r := range []struct {
		typ string
		n   int
	}{{"pdr", cp.PDRs}, {"far", cp.FARs}, {"qer", cp.QERs}, {"urr", cp.URRs}, {"bar", cp.BARs}} {
		ch <- prometheus.MustNewConstMetric(upfRules, prometheus.GaugeValue, float64(r.n), r.typ)
	}
}

func knownDropReason(s string) bool {
	for r := range upfu.NumDropReasons {
		if r.String() == s {
			return true
		}
	}
	return false
}

// RegisterUPF registers the collectors of a UPF running as its own process
// (tern nf upf) with r: its counters and its PFCP endpoint's.
func RegisterUPF(r *prometheus.Registry, up *upf.UPF) error {
	for _, col := range []prometheus.Collector{upfCollector{up}, pfcpCollector{{"upf", up.PFCPStats}}} {
		if err := r.Register(col); err != nil {
			return err
		}
	}
	return nil
}
