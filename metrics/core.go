package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/smf"
)

var amfStats = []stat[amf.Stats]{
	gauge("amf", "registered_ues", "UEs in RM-REGISTERED.", func(s *amf.Stats) float64 { return u(s.RegisteredUEs) }),
	gauge("amf", "connected_ues", "UEs in CM-CONNECTED (registering ones included).", func(s *amf.Stats) float64 { return u(s.ConnectedUEs) }),
	gauge("amf", "idle_ues", "RM-REGISTERED UEs in CM-IDLE.", func(s *amf.Stats) float64 { return u(s.IdleUEs) }),
	gauge("amf", "ue_contexts", "UE contexts the AMF holds (registered or in a procedure).", func(s *amf.Stats) float64 { return u(s.UEContexts) }),
	gauge("amf", "gnbs", "gNB associations with a successful NG Setup.", func(s *amf.Stats) float64 { return u(s.GNBs) }),
	gauge("amf", "pdu_sessions", "PDU sessions (SM contexts) the AMF holds.", func(s *amf.Stats) float64 { return u(s.PDUSessions) }),
	gauge("amf", "pending_transfers", "N1N2MessageTransfers waiting for a paged UE.", func(s *amf.Stats) float64 { return u(s.PendingTransfers) }),

	counter("amf", "ng_setups_total", "NG Setup Responses sent.", func(s *amf.Stats) float64 { return u(s.NGSetups) }),
	counter("amf", "ng_setup_failures_total", "NG Setup Failures sent.", func(s *amf.Stats) float64 { return u(s.NGSetupFailures) }),
	counter("amf", "ng_resets_total", "NG Resets received from or sent to gNBs.", func(s *amf.Stats) float64 { return u(s.NGResets) }),
	counter("amf", "registrations_total", "Registrations completed (Registration Complete received).", func(s *amf.Stats) float64 { return u(s.Registrations) }),
	counter("amf", "registration_rejects_total", "Registration Rejects sent.", func(s *amf.Stats) float64 { return u(s.RegistrationRejects) }),
	counter("amf", "authentications_total", "Successful 5G-AKA runs.", func(s *amf.Stats) float64 { return u(s.Authentications) }),
	counter("amf", "authentication_rejects_total", "Authentication Rejects sent.", func(s *amf.Stats) float64 { return u(s.AuthenticationFails) }),
	counter("amf", "resynchronisations_total", "SQN re-synchronisations (AUTS) run.", func(s *amf.Stats) float64 { return u(s.Resyncs) }),
	counter("amf", "security_modes_total", "Security Mode Completes received.", func(s *amf.Stats) float64 { return u(s.SecurityModes) }),
	counter("amf", "identifications_total", "Identity Responses received.", func(s *amf.Stats) float64 { return u(s.Identifications) }),
	counter("amf", "deregistrations_total", "UE-originating deregistrations.", func(s *amf.Stats) float64 { return u(s.Deregistrations) }),
	counter("amf", "network_deregistrations_total", "Network-initiated deregistrations completed.", func(s *amf.Stats) float64 { return u(s.NetworkDeregistrations) }),
	counter("amf", "implicit_deregistrations_total", "UEs deregistered by the implicit deregistration timer.", func(s *amf.Stats) float64 { return u(s.ImplicitDeregistrations) }),
	counter("amf", "ngap_error_indications_sent_total", "NGAP Error Indications sent.", func(s *amf.Stats) float64 { return u(s.ErrorIndications) }),
	counter("amf", "nas_discarded_total", "NAS messages discarded (bad MAC, not allowed unprotected, undecodable).", func(s *amf.Stats) float64 { return u(s.NASDiscarded) }),
	counter("amf", "refused_events_total", "Events the UE state machine did not allow in the UE's state.", func(s *amf.Stats) float64 { return u(s.Refused) }),
	counter("amf", "nas_retransmissions_total", "NAS retransmissions on T3550/T3560/T3570/T3513/T3522 expiry.", func(s *amf.Stats) float64 { return u(s.Retransmissions) }),
	counter("amf", "procedure_timeouts_total", "Procedures aborted after their last retransmission.", func(s *amf.Stats) float64 { return u(s.ProcedureTimeouts) }),
	counter("amf", "ue_context_releases_total", "UE Context Release Completes received.", func(s *amf.Stats) float64 { return u(s.UEContextReleases) }),
	counter("amf", "sm_contexts_created_total", "Successful Nsmf_PDUSession_CreateSMContext calls.", func(s *amf.Stats) float64 { return u(s.SMContextsCreated) }),
	counter("amf", "sm_contexts_rejected_total", "PDU session establishments refused by the SMF or not forwarded.", func(s *amf.Stats) float64 { return u(s.SMContextsRejected) }),
	counter("amf", "sm_contexts_released_total", "PDU sessions the AMF forgot (SMF notification, AMF release).", func(s *amf.Stats) float64 { return u(s.SMContextsReleased) }),
	counter("amf", "n1n2_transfers_total", "Namf_Communication_N1N2MessageTransfers accepted.", func(s *amf.Stats) float64 { return u(s.N1N2Transfers) }),
	counter("amf", "service_requests_total", "Service Accepts sent.", func(s *amf.Stats) float64 { return u(s.ServiceRequests) }),
	counter("amf", "service_rejects_total", "Service Rejects sent.", func(s *amf.Stats) float64 { return u(s.ServiceRejects) }),
	counter("amf", "pagings_total", "Paging procedures started (each may send several Paging rounds).", func(s *amf.Stats) float64 { return u(s.Pagings) }),
	counter("amf", "paging_failures_total", "Paging procedures ended by T3513's last expiry.", func(s *amf.Stats) float64 { return u(s.PagingFailures) }),
	counter("amf", "handovers_total", "N2 handovers prepared (Handover Request sent).", func(s *amf.Stats) float64 { return u(s.Handovers) }),
	counter("amf", "handovers_completed_total", "N2 handovers completed (Handover Notify).", func(s *amf.Stats) float64 { return u(s.HandoversCompleted) }),
	counter("amf", "handover_failures_total", "N2 handovers failed, cancelled or timed out.", func(s *amf.Stats) float64 { return u(s.HandoverFailures) }),
	counter("amf", "path_switches_total", "Xn handovers (Path Switch Request Acknowledges sent).", func(s *amf.Stats) float64 { return u(s.PathSwitches) }),
	counter("amf", "path_switch_failures_total", "Path Switch Request Failures sent.", func(s *amf.Stats) float64 { return u(s.PathSwitchFailures) }),
}

var smfStats = []stat[smf.Stats]{
	gauge("smf", "sm_contexts", "Live SM contexts (PDU sessions).", func(s *smf.Stats) float64 { return u(s.Contexts) }),
	gauge("smf", "n4_sessions", "PFCP sessions established and not deleted.", func(s *smf.Stats) float64 { return u(s.N4Sessions) }),
	gauge("smf", "policy_associations", "SM policy associations held at the PCF.", func(s *smf.Stats) float64 { return u(s.Policies) }),

	counter("smf", "pdu_sessions_established_total", "PDU sessions whose establishment completed (N2 setup answered).", func(s *smf.Stats) float64 { return u(s.Established) }),
	counter("smf", "pdu_sessions_rejected_total", "PDU Session Establishment Rejects sent.", func(s *smf.Stats) float64 { return u(s.Rejected) }),
	counter("smf", "pdu_sessions_released_total", "SM contexts removed, for any reason.", func(s *smf.Stats) float64 { return u(s.Released) }),
	counter("smf", "pdu_session_modifications_total", "PDU session modifications completed.", func(s *smf.Stats) float64 { return u(s.Modified) }),
	counter("smf", "pfcp_usage_reports_total", "PFCP usage reports received.", func(s *smf.Stats) float64 { return u(s.UsageReports) }),
	counter("smf", "pfcp_downlink_data_reports_total", "PFCP downlink data reports received.", func(s *smf.Stats) float64 { return u(s.DLDataReports) }),
	counter("smf", "n4_failures_total", "PFCP requests that failed or were rejected.", func(s *smf.Stats) float64 { return u(s.N4Failures) }),
	counter("smf", "amf_failures_total", "N1N2MessageTransfers and status notifications to the AMF that failed.", func(s *smf.Stats) float64 { return u(s.AMFFailures) }),
	counter("smf", "paging_failures_total", "Downlink data whose UE could not be reached (the UPF discarded the buffer).", func(s *smf.Stats) float64 { return u(s.PagingFailures) }),
	counter("smf", "handovers_total", "N2 handovers completed (downlink switched to the target).", func(s *smf.Stats) float64 { return u(s.Handovers) }),
	counter("smf", "path_switches_total", "Xn path switches done.", func(s *smf.Stats) float64 { return u(s.PathSwitches) }),
	counter("smf", "user_plane_deactivations_total", "User planes taken down with an AN release (the UPF buffers from then).", func(s *smf.Stats) float64 { return u(s.Deactivations) }),
	counter("smf", "user_plane_activations_total", "User planes brought back by a service request.", func(s *smf.Stats) float64 { return u(s.Activations) }),
	counter("smf", "pfcp_associations_total", "PFCP associations set up (first ones included).", func(s *smf.Stats) float64 { return u(s.Associations) }),
	counter("smf", "pfcp_heartbeats_missed_total", "PFCP heartbeats that timed out.", func(s *smf.Stats) float64 { return u(s.HeartbeatsMissed) }),
	counter("smf", "upf_failures_total", "UPFs marked down after missing their heartbeat retries.", func(s *smf.Stats) float64 { return u(s.UPFFailures) }),
	counter("smf", "sessions_restored_total", "PFCP sessions established again at a restarted UPF.", func(s *smf.Stats) float64 { return u(s.SessionsRestored) }),
	counter("smf", "sessions_not_restored_total", "PDU sessions released because restoring them at a restarted UPF failed.", func(s *smf.Stats) float64 { return u(s.SessionsNotRestored) }),
	counter("smf", "sessions_kept_total", "PFCP sessions kept for the next association because the UPF was gone again during their restoration.", func(s *smf.Stats) float64 { return u(s.SessionsKept) }),
	counter("smf", "sessions_restored_same_teid_total", "Sessions restored with their uplink F-TEID (RESTI, or a CHOOSE that gave the same one).", func(s *smf.Stats) float64 { return u(s.RestoredSameTEID) }),
	counter("smf", "uplinks_moved_total", "Sessions restored with a new uplink F-TEID, sent to the 5G-AN in a PDU Session Resource Modify Request.", func(s *smf.Stats) float64 { return u(s.UplinksMoved) }),
	counter("smf", "establishments_waited_total", "PDU session establishments that waited for a UPF (none up for the DNN, or one that had lost its association).", func(s *smf.Stats) float64 { return u(s.EstablishmentsHeld) }),
	gauge("smf", "establishments_waiting", "PDU session establishments waiting for a UPF now.", func(s *smf.Stats) float64 { return u(s.Waiting) }),
	gauge("smf", "n4_deletions_pending", "PFCP session deletions awaiting the UPF's answer (each bounded by the PFCP deadline).", func(s *smf.Stats) float64 { return u(s.N4Deleting) }),
	gauge("smf", "ue_addresses_quarantined", "UE addresses held back from the pools: the UPF neither confirmed their session's deletion nor restarted.", func(s *smf.Stats) float64 { return float64(s.QuarantinedIPs) }),
	counter("smf", "pfcp_error_indication_reports_total", "PFCP reports of a broken N3 tunnel (a gNB's GTP-U Error Indication).", func(s *smf.Stats) float64 { return u(s.ErrorIndicationReports) }),
	counter("smf", "pfcp_node_reports_total", "PFCP node reports (user plane path failure or recovery).", func(s *smf.Stats) float64 { return u(s.NodeReports) }),
	counter("smf", "user_plane_failure_deactivations_total", "User planes taken down by reported N3 failures.", func(s *smf.Stats) float64 { return u(s.UPFailureDeactivations) }),
}

// upfStates are the states smf.UPFStates reports; each UPF has one series
// per state, 1 for the current one.
var upfStates = []string{"up", "down", "restoring"}

var (
	subscribersDesc = desc("store", "subscribers", "Subscribers in the store.")
	ueAddressesDesc = desc("smf", "ue_addresses", "UE addresses allocated, by DNN.", "dnn")
	upfStateDesc    = desc("smf", "upf_state", "State of each UPF as the SMF sees it: 1 for its current state (up, down, restoring), 0 for the others.", "upf", "state")
)

// coreCollector reads a core unit's counters at scrape time.
type coreCollector struct{ c *core.Core }

func (cc coreCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, amfStats)
	describe(ch, smfStats)
	ch <- subscribersDesc
	ch <- ueAddressesDesc
	ch <- upfStateDesc
}

func (cc coreCollector) Collect(ch chan<- prometheus.Metric) {
	st := cc.c.Stats()
	collect(ch, amfStats, &st.AMF)
	collect(ch, smfStats, &st.SMF)
	ch <- prometheus.MustNewConstMetric(subscribersDesc, prometheus.GaugeValue, float64(st.Subscribers))
	for dnn, n := range st.SMF.IPs {
		ch <- prometheus.MustNewConstMetric(ueAddressesDesc, prometheus.GaugeValue, float64(n), dnn)
	}
	for name, state := range cc.c.SMF.UPFStates() {
		states := upfStates
		if !slices.Contains(states, state) {
			states = append(slices.Clip(states), state) // a state added to the SMF later
		}
		for _, s := range states {
			v := 0.0
			if s == state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(upfStateDesc, prometheus.GaugeValue, v, name, s)
		}
	}
}

// RegisterCore registers the collectors of core unit c with r: the AMF,
// SMF, store and embedded UPF counters, the SMF's PFCP endpoint, and the
// procedure histogram, which it makes the AMF's and the SMF's Observer.
func RegisterCore(r *prometheus.Registry, c *core.Core) error {
	p := NewProcedures()
	pc := pfcpCollector{{"smf", c.N4Stats}}
	cs := []prometheus.Collector{coreCollector{c}, p}
	if c.UPF != nil {
		// An embedded UPF may have a PFCP endpoint of its own (upf.pfcpAddr)
		// for SMFs elsewhere.
		pc = append(pc, pfcpSource{"upf", c.UPF.PFCPStats})
		cs = append(cs, upfCollector{c.UPF})
	}
	cs = append(cs, pc)
	for _, col := range cs {
		if err := r.Register(col); err != nil {
			return err
		}
	}
	c.AMF.SetObserver(p)
	c.SMF.SetObserver(p)
	return nil
}
