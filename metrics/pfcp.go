package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tern5g/tern/pfcp"
)

var pfcpStats = []struct {
	desc *prometheus.Desc
	val  func(*pfcp.EndpointStats) uint64
}{
	{desc("pfcp", "messages_received_total", "PFCP messages received by the endpoint.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.Received }},
	{desc("pfcp", "messages_sent_total", "PFCP messages sent by the endpoint.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.Sent }},
	{desc("pfcp", "messages_dropped_total", "PFCP messages dropped: undecodable, unknown type, unexpected response.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.Dropped }},
	{desc("pfcp", "retransmissions_total", "PFCP requests sent again after T1.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.Retransmissions }},
	{desc("pfcp", "duplicates_answered_total", "Retransmitted PFCP requests answered from the cache.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.DuplicatesAnswered }},
	{desc("pfcp", "timeouts_total", "PFCP requests that got no response after N1 retransmissions.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.Timeouts }},
	{desc("pfcp", "version_not_supported_total", "PFCP Version Not Supported Responses sent.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.VersionNotSupported }},
	{desc("pfcp", "mandatory_ie_errors_total", "PFCP requests answered with an IE error cause.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.MandatoryIEErrors }},
	{desc("pfcp", "handler_missing_total", "PFCP requests answered with Service not supported.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.HandlerMissing }},
	{desc("pfcp", "responses_unmatched_total", "PFCP responses with no outstanding request.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.ResponsesUnmatched }},
	{desc("pfcp", "reused_sequences_total", "PFCP requests reusing a cached request's sequence number with other octets (served as new).", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.ReusedSequences }},
	{desc("pfcp", "peer_restarts_total", "PFCP peers seen with a new Recovery Time Stamp.", "endpoint"), func(s *pfcp.EndpointStats) uint64 { return s.PeerRestarts }},
}

// pfcpSource is one PFCP endpoint of the process: its label and its
// counters, absent (false) while it has none.
type pfcpSource struct {
	endpoint string
	stats    func() (pfcp.EndpointStats, bool)
}

// pfcpCollector reads the process's PFCP endpoints at scrape time. One
// collector holds them all: a registry takes each metric family from one
// collector only.
type pfcpCollector []pfcpSource

func (pc pfcpCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range pfcpStats {
		ch <- s.desc
	}
}

func (pc pfcpCollector) Collect(ch chan<- prometheus.Metric) {
	for _, src := range pc {
		st, ok := src.stats()
		if !ok {
			continue
		}
		for _, s := range pfcpStats {
			ch <- prometheus.MustNewConstMetric(s.desc, prometheus.CounterValue, float64(s.val(&st)), src.endpoint)
		}
	}
}
