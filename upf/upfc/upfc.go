// Package upfc is the UPF's control part (UPF-C): it terminates the PFCP
// procedures of TS 29.244 towards the SMF (association, session
// establishment, modification, deletion and reporting), keeps each session's
// PDRs, FARs, QERs, URRs and BAR, and compiles every accepted change into an
// immutable rules.Session that the user-plane pipeline (UPF-U) executes.
// Its state is kept as versioned records that another instance restores
// from (record.go).
package upfc

import (
	"context"
	"io"
	"log/slog"
	"math/bits"
	"net/netip"
	"sync"
	"time"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// DataPath is the user plane UPF-C programs (upf/upfu implements it).
// Install publishes a new snapshot of a session (replacing one with the
// same SEID); Remove withdraws it. Both are called in commit order.
type DataPath interface {
	Install(s *rules.Session)
	Remove(seid uint64)
}

// UsageFlusher is implemented by a DataPath that counts part of the usage
// outside rules.Counters (an offloaded fast path keeps per-CPU counters in
// the kernel) and adds it in on demand. UPF-C calls FlushUsage before it
// reads a session's counters for a report; Remove must add the final
// counts itself.
type UsageFlusher interface {
	FlushUsage(seid uint64)
}

// flushUsage brings the session's counters up to date (UsageFlusher).
func (c *UPFC) flushUsage(seid uint64) {
	if f, ok := c.dp.(UsageFlusher); ok {
		f.FlushUsage(seid)
	}
}

// UP Function Features (TS 29.244 §8.2.25), packed like
// pfcp.AssociationSetupRequest.UPFunctionFeatures (octet 5 in bits 0-7).
const (
	FeatureBUCP uint64 = 1 << 0 // buffering of downlink data in the UP function
	FeatureFTUP uint64 = 1 << 4 // F-TEID allocation / release in the UP function
)

// Config configures UPF-C.
type Config struct {
	// NodeID is this UPF's Node ID (§8.2.38), sent in every response.
	NodeID pfcp.NodeID
	// N4Addr is the IPv4 address put in the UP F-SEID; when invalid, the
	// Node ID's address is used.
	N4Addr netip.Addr
	// N3Addr is the IPv4 address of the N3 interface, returned in F-TEIDs
	// the UPF allocates (CHOOSE, §5.5.3). Invalid = no UP allocation.
	N3Addr netip.Addr
	// TEIDPlaces, a power of two, spreads the TEIDs the UPF allocates:
	// it skips a TEID whose value modulo TEIDPlaces (its place) a live
	// TEID has, while a free place is left, so that a data path that
	// finds sessions at that place (the XDP fast path's session index)
	// sees no two share one. 0 or 1: no spreading.
	TEIDPlaces uint32
	// NetworkInstances are the DNNs that have an N6 device. When set, a
	// FAR forwarding to the core must name one of them or, when there are
	// several, be resolvable to one by NetworkPools.
	NetworkInstances []string
	// NetworkPools is the UE address pool routed to each network
	// instance's N6 (upf.n6[].pool). A FAR forwarding to the core without
	// a Network Instance, where there are several, goes to the network
	// whose pool holds the session's UE address: SMFs that never name
	// one (test tools such as pfcpsim) work on a UPF with two DNNs.
	NetworkPools map[string]netip.Prefix
	// Classifier selects the per-session classifier; "" = classify.ForTable.
	Classifier classify.Kind
	// NoSessionTables builds no per-session classifiers: sessions carry
	// only their rule lists, for a data path that classifies every packet
	// on one UPF-wide table (upfu.Config.GlobalPDRTable).
	NoSessionTables bool
	// ReportTimeout bounds one Session Report Request (default 10s; the
	// PFCP binding retransmits within it).
	ReportTimeout time.Duration
	// ReportQueue bounds the reports waiting to be sent (default 4096);
	// beyond it reports are dropped and counted rather than block UPF-U.
	ReportQueue int
	// RecoveryTime is the Recovery Time Stamp advertised (§19A); zero =
	// now. Truncated to the second. An instance restored from records
	// (Restore) advertises its predecessor's instead.
	RecoveryTime time.Time
	// Recorder, when set, gets the record of every object a step changed
	// (record.go); nil records nothing and costs nothing measurable.
	Recorder Recorder
}

// Stats counts what UPF-C holds.
type Stats struct {
	Associations int
	Sessions     int
	PDRs         int
	FARs         int
	QERs         int
	URRs         int
	BARs         int
	TEIDs        int // allocated local F-TEIDs
	// Restored counts sessions established with RESTI (TS 29.244
	// §8.2.136): an SMF re-establishing what this UPF lost in a restart.
	Restored uint64
	// Repeated counts establishment requests for a session that exists
	// (same association, same CP F-SEID), answered with that session: a
	// CP function that took over from one that died before it knew the
	// answer (issue 36).
	Repeated uint64
	// Session Report Requests: answered with acceptance, failed (error or
	// rejection), dropped (queue full, or the session/rule was gone).
	ReportsSent, ReportsFailed, ReportsDropped uint64
	// Node Report Requests (path failure or recovery, TS 29.244 §7.4.5)
	// answered with acceptance, and failed; one per associated CP
	// function per event.
	NodeReportsSent, NodeReportsFailed uint64
}

// association is one PFCP association with a CP function (§6.2.6).
type association struct {
	nodeID pfcp.NodeID
	// cp is where reports go; nil for an association restored from its
	// record until Attach gives it one.
	cp       pfcp.ControlPlane
	peer     netip.AddrPort // the CP's PFCP address, where the binding has one
	recovery time.Time      // the CP's Recovery Time Stamp
	features uint64         // CP Function Features
	seq      uint64         // AssociationRecord.Seq
}

// UPFC implements pfcp.UPHandler. All methods are safe for concurrent use.
type UPFC struct {
	cfg      Config
	dp       DataPath
	log      *slog.Logger
	recovery time.Time
	features uint64

	mu       sync.Mutex
	assocs   map[string]*association // by Node ID string
	sessions map[uint64]*session     // by local (UP) SEID
	byCP     map[cpKey]uint64        // local SEID by association and CP F-SEID
	teids    map[uint32]uint64       // allocated local TEID -> owning SEID
	places   map[uint32]int          // live TEIDs by place (Config.TEIDPlaces)
	nextSEID uint64
	nextTEID uint32
	restored uint64 // Stats.Restored
	repeated uint64 // Stats.Repeated
	seq      uint64 // NodeRecord.Seq
	step     stepLog
	held     []queuedReport // reports of detached associations, for Attach

	reports reportQueue
}

var _ pfcp.UPHandler = (*UPFC)(nil)

// New creates UPF-C programming dp. logger nil discards.
func New(cfg Config, dp DataPath, logger *slog.Logger) *UPFC {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.ReportTimeout <= 0 {
		cfg.ReportTimeout = 10 * time.Second
	}
	if cfg.ReportQueue <= 0 {
		cfg.ReportQueue = 4096
	}
	if cfg.TEIDPlaces&(cfg.TEIDPlaces-1) != 0 {
		cfg.TEIDPlaces = 1 << bits.Len32(cfg.TEIDPlaces) // the next power of two
	}
	if !cfg.N4Addr.IsValid() && cfg.NodeID.IP.Is4() {
		cfg.N4Addr = cfg.NodeID.IP
	}
	recovery := cfg.RecoveryTime
	if recovery.IsZero() {
		recovery = time.Now()
	}
	features := FeatureBUCP
	if cfg.N3Addr.Is4() {
		features |= FeatureFTUP
	}
	// The Recovery Time Stamp has one-second resolution (§8.2.65).
	recovery = recovery.Truncate(time.Second)
	seid, teid := firstIDs(recovery)
	return &UPFC{
		cfg: cfg, dp: dp, log: logger,
		recovery: recovery,
		features: features,
		assocs:   make(map[string]*association),
		sessions: make(map[uint64]*session),
		byCP:     make(map[cpKey]uint64),
		teids:    make(map[uint32]uint64),
		places:   make(map[uint32]int),
		nextSEID: seid,
		nextTEID: teid,
	}
}

// firstIDs are the first SEID and TEID a UPF-C whose life began at
// recovery hands out: past every one its previous life handed out, so
// that nothing of that life reaches a session of this one, neither an
// SMF's request still retransmitted with an old SEID (it would delete or
// modify the restored session that got the same SEID) nor a gNB's
// uplink still sent on a TEID of a session that was not restored (TS
// 23.527 §4.3.2, TS 29.244 §19A). Lives are told apart by their Recovery
// Time Stamps, a second apart at least (a UPF reached over UDP takes the
// next whole second, upf.New), and each life counts from its stamp:
//
//   - SEIDs (64 bits) from the stamp's seconds times 2^32: a life reaches
//     the next one's first SEID only after 2^32 establishments per second
//     it lasted.
//   - TEIDs (32 bits) from the stamp's seconds times 2^16, modulo 2^32: a
//     life reaches the next one's first TEID only after more than 65,536
//     TEIDs per second it lasted, or when it lasted 2^16 s (18 hours) or
//     more, the start then having come round the TEID space. That is where
//     this stops promising: a later life may then hand out a TEID of a
//     session its predecessor did not restore. TEIDs held by restored
//     sessions (RESTI) are never handed out, whatever their value.
//
// The XDP session index places a TEID by its low bits (Config.TEIDPlaces);
// where the count starts does not matter to it.
func firstIDs(recovery time.Time) (seid uint64, teid uint32) {
	sec := uint64(recovery.Unix())
	return sec << 32, uint32(sec << 16) // allocSEID and allocTEID skip 0
}

// RecoveryTime is this UPF-C's Recovery Time Stamp.
func (c *UPFC) RecoveryTime() time.Time { return c.recovery }

// HandleAssociationSetup implements pfcp.UPHandler (TS 29.244 §6.2.6.2).
func (c *UPFC) HandleAssociationSetup(_ context.Context, from pfcp.ControlPlane, req *pfcp.AssociationSetupRequest) *pfcp.AssociationSetupResponse {
	resp := &pfcp.AssociationSetupResponse{NodeID: c.cfg.NodeID, RecoveryTime: c.recovery, UPFunctionFeatures: c.features}
	if req == nil || (!req.NodeID.IP.IsValid() && req.NodeID.FQDN == "") || req.RecoveryTime.IsZero() {
		resp.Cause = pfcp.CauseMandatoryIEMissing
		return resp
	}
	key := req.NodeID.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beginStep()
	defer c.endStep()
	a := &association{nodeID: req.NodeID, cp: from, peer: peerOf(from), recovery: req.RecoveryTime, features: req.CPFunctionFeatures}
	if old := c.assocs[key]; old != nil {
		// §6.2.6.2.2: a new setup from an associated Node ID replaces the
		// association, whatever the peer's address or Recovery Time Stamp
		// (a restarted CP, or another one taking its Node ID over); the new
		// peer gets the reports. The old association's sessions are
		// deleted: tern does not take PFCP Session Retention Information,
		// and its response without PSREI (§8.2.134) tells the CP so.
		n := c.deleteSessionsOf(key)
		c.log.Info("PFCP association replaced", "node", key, "sessions_deleted", n)
		a.seq = old.seq // the replacement is the association's next version
	}
	c.assocs[key] = a
	c.step.assocs = append(c.step.assocs, key)
	c.log.Info("PFCP association set up", "node", key)
	resp.Cause = pfcp.CauseRequestAccepted
	return resp
}

// HandleAssociationRelease implements pfcp.UPHandler (TS 29.244 §6.2.8.2):
// the UP function deletes the sessions of the association locally.
func (c *UPFC) HandleAssociationRelease(_ context.Context, req *pfcp.AssociationReleaseRequest) *pfcp.AssociationReleaseResponse {
	resp := &pfcp.AssociationReleaseResponse{NodeID: c.cfg.NodeID}
	if req == nil || (!req.NodeID.IP.IsValid() && req.NodeID.FQDN == "") {
		resp.Cause = pfcp.CauseMandatoryIEMissing
		return resp
	}
	key := req.NodeID.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.assocs[key]
	if a == nil {
		resp.Cause = pfcp.CauseNoEstablishedPFCPAssociation
		return resp
	}
	c.beginStep()
	defer c.endStep()
	n := c.deleteSessionsOf(key)
	delete(c.assocs, key)
	c.step.released = append(c.step.released, a)
	c.log.Info("PFCP association released", "node", key, "sessions_deleted", n)
	resp.Cause = pfcp.CauseRequestAccepted
	return resp
}

// deleteSessionsOf removes every session of an association. c.mu held.
func (c *UPFC) deleteSessionsOf(key string) int {
	n := 0
	for seid, s := range c.sessions {
		if s.assoc == key {
			c.dropSession(seid, s)
			n++
		}
	}
	return n
}

// dropSession forgets s and withdraws it from the data path. c.mu held.
func (c *UPFC) dropSession(seid uint64, s *session) {
	delete(c.sessions, seid)
	if k := s.cpKey(); c.byCP[k] == seid {
		delete(c.byCP, k)
	}
	c.step.gone = append(c.step.gone, removed{seid: seid, seq: s.seq})
	for teid := range s.teidSet() {
		if c.teids[teid] == seid {
			c.releaseTEID(teid)
		}
	}
	c.armPeriodic(s, nil)
	c.dp.Remove(seid)
}

// holdTEID records teid as seid's. c.mu held.
func (c *UPFC) holdTEID(teid uint32, seid uint64) {
	if _, held := c.teids[teid]; !held {
		c.places[c.place(teid)]++
	}
	c.teids[teid] = seid
}

// releaseTEID forgets teid. c.mu held.
func (c *UPFC) releaseTEID(teid uint32) {
	if _, held := c.teids[teid]; !held {
		return
	}
	delete(c.teids, teid)
	p := c.place(teid)
	if c.places[p]--; c.places[p] <= 0 {
		delete(c.places, p)
	}
}

func (c *UPFC) place(teid uint32) uint32 {
	if c.cfg.TEIDPlaces <= 1 {
		return 0
	}
	return teid & (c.cfg.TEIDPlaces - 1)
}

// Stats returns current counts.
func (c *UPFC) Stats() Stats {
	c.mu.Lock()
	st := Stats{Associations: len(c.assocs), Sessions: len(c.sessions), TEIDs: len(c.teids), Restored: c.restored, Repeated: c.repeated}
	for _, s := range c.sessions {
		st.PDRs += len(s.pdrs)
		st.FARs += len(s.fars)
		st.QERs += len(s.qers)
		st.URRs += len(s.urrs)
		if s.bar != nil {
			st.BARs++
		}
	}
	c.mu.Unlock()
	st.ReportsSent, st.ReportsFailed, st.ReportsDropped, st.NodeReportsSent, st.NodeReportsFailed = c.reports.counts()
	return st
}
