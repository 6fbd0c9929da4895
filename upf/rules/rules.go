// Package rules is the compiled, immutable form of a PFCP session that the
// user-plane pipeline (upf/upfu) executes.
//
// UPF-C compiles PFCP rules (TS 29.244 §5.2) into a Session and publishes it
// through DataPath.Install; UPF-U reads it without locks. A Session and
// everything reachable from it is never modified after Install, except the
// deliberately shared, concurrency-safe state objects (TokenBucket,
// Counters) that UPF-C carries over from one snapshot of a session to the
// next, so that rates and usage survive a modification. The data path
// keeps each session's Buffer itself, across snapshots.
package rules

import (
	"net/netip"

	"github.com/tern5g/tern/classify"
)

// Interface is a PFCP Source/Destination Interface value (TS 29.244 §8.2.2,
// §8.2.24).
type Interface uint8

// Interface values.
const (
	InterfaceAccess     Interface = 0 // N3 (from/to the RAN)
	InterfaceCore       Interface = 1 // N6 (from/to the data network), or N9
	InterfaceSGiLAN     Interface = 2
	InterfaceCPFunction Interface = 3
)

// Action is a FAR's Apply Action (TS 29.244 §8.2.26). The bit values are
// those of pfcp.ApplyAction, so UPF-C converts with a plain conversion;
// the package keeps its own type so the data path does not depend on the
// PFCP codec.
type Action uint16

// Apply Action bits.
const (
	ActionDrop      Action = 1 << 0 // DROP
	ActionForward   Action = 1 << 1 // FORW
	ActionBuffer    Action = 1 << 2 // BUFF
	ActionNotifyCP  Action = 1 << 3 // NOCP: report the first buffered DL packet
	ActionDuplicate Action = 1 << 4 // DUPL (not executed by UPF-U yet)
)

// Session is one PFCP session as UPF-U executes it.
type Session struct {
	SEID   uint64 // UP F-SEID (the key of Install/Remove)
	CPSEID uint64 // CP F-SEID, for reports

	// UEIPv4 is the UE address that downlink packets from N6 are matched
	// on (zero Addr: the session receives no downlink by address).
	UEIPv4 netip.Addr
	// TEIDs are the session's local uplink F-TEIDs: the N3 (or N9) TEIDs
	// that uplink G-PDUs carry.
	TEIDs []uint32

	// PDRs sorted by precedence (lowest value first).
	PDRs []*PDR
	// Uplink holds the PDRs with Source Interface access, Downlink those
	// with Source Interface core. A classifier rule's ID is the index of
	// its PDR in PDRs. The pipeline fills these header fields: SrcIP,
	// DstIP, ports, Proto, ToS, UEIP (inner source for uplink, destination
	// for downlink), TEID and QFI (uplink), SourceInterface. It leaves
	// NetworkInstance and AppID zero, so rules must not match on them.
	// A nil classifier matches nothing.
	Uplink, Downlink classify.Classifier
	// UplinkRules and DownlinkRules are the rules of those classifiers,
	// each rule's ID the index of its PDR in PDRs (a PDR with several SDF
	// filters or QFIs has several rules with the same ID). A data path
	// with one UPF-wide table (upfu.Config.GlobalPDRTable) classifies on
	// these instead of the per-session classifiers.
	UplinkRules, DownlinkRules []classify.Rule

	// BufferPackets bounds the session's downlink buffer in packets: the
	// Suggested Buffering Packets Count of the BAR its buffering FARs name
	// (TS 29.244 §5.2.4, §7.5.2.6); 0: the data path's default. The data
	// path keeps one Buffer per SEID across Installs until Remove.
	BufferPackets int
}

// PDR is a Packet Detection Rule with its associated action rules resolved
// (TS 29.244 §5.2.1).
type PDR struct {
	ID         uint16
	Precedence uint32
	Source     Interface
	// RemoveOuterHeader: Outer Header Removal GTP-U/UDP/IPv4 (§8.2.64).
	RemoveOuterHeader bool
	FAR               *FAR // never nil
	QERs              []*QER
	URRs              []*URR
}

// MarkQFI is the QFI to mark the PDR's packets with: the first QER's QFI
// (TS 29.244 §5.2.1A, "QFI" of the QER), else def.
func (p *PDR) MarkQFI(def uint8) uint8 {
	for _, q := range p.QERs {
		if q.QFI != 0 {
			return q.QFI
		}
	}
	return def
}

// StopsForwarding reports whether a FAR of old that forwarded to a tunnel
// no longer does in s: the FAR with the same ID drops, buffers or has no
// tunnel; with retargeted, also when it forwards to another tunnel. A data
// path that promises nothing more reaches the old tunnel once the change
// is made waits for its packets in flight then.
func StopsForwarding(old, s *Session, retargeted bool) bool {
	for _, op := range old.PDRs {
		of := op.FAR
		if of == nil || of.Encap == nil || of.Action&ActionForward == 0 {
			continue
		}
		for _, p := range s.PDRs {
			f := p.FAR
			if f == nil || f.ID != of.ID {
				continue
			}
			if f.Encap == nil || f.Action&ActionForward == 0 || retargeted && *f.Encap != *of.Encap {
				return true
			}
		}
	}
	return false
}

// FAR is a Forwarding Action Rule (TS 29.244 §5.2.3).
type FAR struct {
	ID     uint32
	Action Action
	Dest   Interface
	// NetworkInstance selects the N6 device (the DNN) for packets that
	// leave towards the core without Encap.
	NetworkInstance string
	// Encap is the Outer Header Creation (GTP-U/UDP/IPv4); nil = none.
	Encap *Encap
	BARID uint8
	// SendEndMarker: the modification that produced this snapshot set
	// SNDEM in the FAR's Update Forwarding Parameters (TS 29.244
	// §8.2.31). If Encap differs from the previous snapshot's for the same
	// FAR ID, the data path sends an End Marker (TS 29.281 §7.3.2) on the
	// previous tunnel. Set only in that one snapshot.
	SendEndMarker bool
}

// Encap is an Outer Header Creation for GTP-U/UDP/IPv4 (§8.2.56).
type Encap struct {
	TEID uint32
	Peer netip.AddrPort // IPv4, port 2152
	// QFI to put in the PDU Session Container when no QER of the PDR
	// carries one (TS 38.415 §5.5.2.1).
	QFI uint8
}

// QER is a QoS Enforcement Rule (TS 29.244 §5.2.2): gate and maximum bit
// rate per direction.
type QER struct {
	ID             uint32
	QFI            uint8 // 0 = none; marks DL G-PDUs
	ULOpen, DLOpen bool
	// MBR token buckets, shared across snapshots; nil = no limit.
	MBRUL, MBRDL *TokenBucket
}

// URR is a Usage Reporting Rule (TS 29.244 §5.2.2): volume measurement
// with an optional threshold and quota.
type URR struct {
	ID       uint32
	Counters *Counters // shared across snapshots; never nil
	// Threshold: a Usage Report is raised when a counted volume crosses
	// it (volume threshold, §5.2.2.3.1); UPF-C then moves it on by the
	// threshold for the next measurement. Zero fields are absent.
	Threshold Volume
	// Quota: a Usage Report is raised when a counted volume reaches it,
	// and from then on the packets of the PDRs that use the URR are
	// dropped until the CP function grants a new quota (volume quota,
	// §5.2.2.2.1; no FAR for Quota Action). Zero fields are absent.
	// Counters never restart, so Threshold and Quota are counter values
	// (UPF-C adds the count at the start of the measurement).
	Quota Volume
	// QuotaSpent: the quota was used up and reported; packets are dropped
	// whatever the counters say, until a new quota comes.
	QuotaSpent bool
}

// Crossings says which of the URR's thresholds and quotas a packet of n
// bytes crossed, given the counts of its direction and of both directions
// after it was added (Counters.Add). Of concurrent adders exactly one sees
// each crossing, so each is reported once. Shared by every data path that
// counts into Counters.
func (u *URR) Crossings(d Direction, dirBytes, total uint64, n int) UsageTrigger {
	th, q := &u.Threshold, &u.Quota
	dirTh, dirQ := th.UL, q.UL
	if d == Downlink {
		dirTh, dirQ = th.DL, q.DL
	}
	var why UsageTrigger
	if Crossed(th.Total, total, n) || Crossed(dirTh, dirBytes, n) {
		why |= UsageVolumeThreshold
	}
	if Crossed(q.Total, total, n) || Crossed(dirQ, dirBytes, n) {
		why |= UsageVolumeQuota
	}
	return why
}

// HasQuota reports whether the URR limits volume.
func (u *URR) HasQuota() bool { return u.QuotaSpent || u.Quota != Volume{} }

// QuotaExhausted reports whether the measured volume has reached the
// quota in direction d or in total.
func (u *URR) QuotaExhausted(d Direction) bool {
	if u.QuotaSpent {
		return true
	}
	q := &u.Quota
	dirQuota, dirBytes := q.UL, &u.Counters.ulBytes
	if d == Downlink {
		dirQuota, dirBytes = q.DL, &u.Counters.dlBytes
	}
	return (q.Total != 0 && u.Counters.totalBytes.Load() >= q.Total) ||
		(dirQuota != 0 && dirBytes.Load() >= dirQuota)
}

// Volume is a byte volume per direction (TS 29.244 §8.2.13).
type Volume struct {
	Total, UL, DL uint64
}

// Direction of a packet.
type Direction uint8

// Directions.
const (
	Uplink Direction = iota
	Downlink
)

// ReportKind says what a Report is about.
type ReportKind uint8

// Report kinds (TS 29.244 §8.2.21 Report Type).
const (
	ReportDownlinkData ReportKind = iota + 1 // DLDR: first packet buffered with NOCP
	ReportUsage                              // USAR: URR threshold reached
	// ReportErrorIndication (ERIR, TS 29.244 §5.10): a GTP-U Error
	// Indication came back for a tunnel a FAR of the session sends to.
	ReportErrorIndication
)

// UsageTrigger is what raised a usage report (a set of bits; TS 29.244
// §8.2.41 Usage Report Trigger).
type UsageTrigger uint8

// Usage triggers the data path raises.
const (
	UsageVolumeThreshold UsageTrigger = 1 << iota // VOLTH
	UsageVolumeQuota                              // VOLQU
)

// Report is what UPF-U tells UPF-C, which turns it into a PFCP Session
// Report Request (TS 29.244 §7.5.8).
type Report struct {
	Kind ReportKind
	// Usage says what raised a USAR: UsageVolumeThreshold,
	// UsageVolumeQuota, or both.
	Usage UsageTrigger
	PDRID uint16 // DLDR: the PDR that buffered; USAR: the PDR that counted
	QFI   uint8  // DLDR: QFI of the buffered packet, 0 if unknown
	URRID uint32 // USAR
	// Volume is the URR's measured volume when the report was raised
	// (USAR only).
	Volume Volume
	// Packets per direction (USAR only).
	ULPackets, DLPackets uint64
	// RemoteTEID and RemotePeer are the tunnel the Error Indication named
	// (ERIR only): its TEID Data I and GTP-U Peer Address (TS 29.281
	// §7.3.1), the remote F-TEID of the report (TS 29.244 §7.5.8.4).
	RemoteTEID uint32
	RemotePeer netip.Addr
}
