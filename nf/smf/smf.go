// Package smf is tern's Session Management Function: Nsmf_PDUSession for SM
// contexts (TS 29.502), the 5GSM procedures of TS 24.501 §6.3-§6.4 (PDU
// session establishment, modification and release, UE- and
// network-requested), UE IPv4 pools per DNN, UPF selection and PFCP session
// management over N4 (TS 29.244), with policy from the PCF
// (Npcf_SMPolicyControl, TS 29.512).
//
// # Calling the SMF from the AMF (reentrancy)
//
// The SMF never calls the AMF (N1N2MessageTransfer, SMContextStatusNotify)
// while it holds any lock and never from inside a call the AMF made:
// CreateSMContext, UpdateSMContext and ReleaseSMContext return without
// waiting for anything the AMF does. Everything the SMF sends to the AMF on
// its own initiative (the establishment Accept/Reject after PFCP, network-
// requested modification and release, retransmissions, status
// notifications) goes out from a per-UE outbound queue, in order. So the
// AMF may serve N1N2MessageTransfer synchronously or by queuing it to the
// UE's executor, and may call the SMF from its UE executor, but it must not
// wait in N1N2MessageTransfer for its own UE executor (which may be waiting
// for this SMF).
//
// Because CreateSMContext returns before the N1N2MessageTransfer carrying
// the PDU Session Establishment Accept arrives, the AMF must record the SM
// context (ref and PDU session ID) before it can process that transfer:
// either record it before its UE executor handles anything else (the
// transfer is queued behind), or look the session up by SUPI and
// Data.PduSessionId when the transfer comes.
//
// Concurrency (package internal/serial, shared with the AMF): every request,
// timer expiry and message to the AMF of one UE runs on that UE's
// executor, one at a time, so procedures of one UE are serialised without
// locks and different UEs run in parallel; the lookup tables are sharded.
// PFCP and SBI calls made for a UE carry a deadline.
package smf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/internal/procedures"
	"github.com/tern5g/tern/internal/serial"
	"github.com/tern5g/tern/internal/shardmap"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// Deps are the services the SMF consumes.
type Deps struct {
	AMF       sbi.Communication            // Namf_Communication (N1N2MessageTransfer)
	AMFStatus sbi.SMContextStatusNotifier  // SM context status notifications to the AMF
	SDM       sbi.SubscriberDataManagement // Nudm_SDM (sm-data)
	PCF       sbi.SMPolicyControl          // Npcf_SMPolicyControl
	UPFs      map[string]pfcp.UserPlane    // N4 to each UPF by UPFConfig.Name; may also be set with SetUserPlane
	// Recorder, if not nil, gets the record of every UE and UPF that a
	// step changed (record.go); nil costs nothing.
	Recorder Recorder
}

func (d Deps) validate() error {
	switch {
	case d.AMF == nil:
		return errors.New("smf deps: AMF (sbi.Communication) is nil")
	case d.AMFStatus == nil:
		return errors.New("smf deps: AMFStatus (sbi.SMContextStatusNotifier) is nil")
	case d.SDM == nil:
		return errors.New("smf deps: SDM (sbi.SubscriberDataManagement) is nil")
	case d.PCF == nil:
		return errors.New("smf deps: PCF (sbi.SMPolicyControl) is nil")
	}
	return nil
}

// upfNode is one configured UPF (restoration.go has its states).
type upfNode struct {
	name     string
	n3       netip.Addr
	up       pfcp.UserPlane
	st       atomic.Int32 // upfState
	sessions atomic.Int64 // PFCP sessions established and not deleted
	// features are the UP Function Features of the last association
	// (TS 29.244 §8.2.25), packed as pfcp.AssociationSetupResponse has
	// them; restoration reads FTUP.
	features atomic.Uint64
	// epoch counts the associations set up with the UPF.
	epoch atomic.Uint64
	// life is the UPF's current life as the SMF knows it (n4Life): every
	// N4 request of a session established in it ends with it.
	life atomic.Pointer[n4Life]
	// unassociated is 1 + the association epoch in which the UPF answered
	// a session request that it has no association with the SMF (0:
	// none): its supervisor associates again (restoration.go).
	unassociated atomic.Uint64
	// restoration is how a restored session's uplink F-TEID is chosen
	// here (UPFConfig.Restoration, restoration.go).
	restoration string
	// recovery is the UPF's Recovery Time Stamp in its current life;
	// mustRestore: sessions at the UPF wait for their restoration (its
	// life ended, or a restoration was interrupted); associatedAt: when
	// the last association was set up. Written by its supervisor only
	// (by Start before the supervisor runs); recovery and mustRestore
	// under recMu, for Records.
	recovery     time.Time
	mustRestore  bool
	associatedAt time.Time
	// deletions are the UPF's PFCP session deletions (n4.go).
	deletions deletionQueue
	// quarantine are the UE addresses whose deleted sessions the UPF may
	// still hold (n4.go).
	quarantine quarantine
	// nodeID is the Node ID the UPF gave in its last association, for
	// node-level reports (nil until associated).
	nodeID atomic.Pointer[pfcp.NodeID]
	// check wakes the supervisor for a heartbeat now (restoration.go).
	check chan struct{}
	// recMu orders the changes of what the UPF's record holds
	// (changeUPF, record.go) and guards recovery and mustRestore, which
	// its supervisor writes and Records reads; seq is the record's
	// version. restored are the PFCP session deletions a Restore took
	// over, sent once Start has dealt with the association.
	recMu    sync.Mutex
	seq      uint64
	restored []*n4Deletion
}

// SMF is one SMF instance. It implements sbi.PDUSession,
// sbi.SMPolicyNotifier and pfcp.CPHandler.
type SMF struct {
	cfg  *servedConfig
	deps Deps
	log  *slog.Logger

	apiRoot string // prefix of the callback URIs (Config.APIRoot)

	// group owns the SMF's goroutines (UE executors, the keep-alive loop);
	// its context, cancelled by Close, bounds outbound calls.
	group *serial.Group
	start time.Time // PFCP recovery time stamp

	ues      *shardmap.Map[string, *ueState]   // by SUPI
	contexts *shardmap.Map[string, *smContext] // by SM context ref
	seids    *shardmap.Map[uint64, *smContext] // by CP F-SEID

	nextRef  atomic.Uint64
	nextSEID atomic.Uint64
	// allocMu orders the allocator records (recordAllocators).
	allocMu sync.Mutex

	procs procedures.Reporter // procedure ends: log and Observer

	// waiting are the establishments waiting for a UPF (wait.go).
	waiting waitList

	// recorder gets the records of what changed (Deps.Recorder, record.go).
	recorder Recorder

	mu       sync.Mutex
	started  bool
	restored bool // Restore has run (record.go)

	stats counters
}

var (
	_ sbi.PDUSession       = (*SMF)(nil)
	_ sbi.SMPolicyNotifier = (*SMF)(nil)
	_ pfcp.CPHandler       = (*SMF)(nil)
)

// New validates cfg (after applying defaults) and builds an SMF. Call Start
// to associate with the UPFs before serving requests.
func New(cfg Config, deps Deps, logger *slog.Logger) (*SMF, error) {
	cfg = cfg.WithDefaults()
	served, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &SMF{
		cfg:      served,
		deps:     deps,
		log:      logger.With("nf", "smf"),
		apiRoot:  strings.TrimSuffix(cfg.APIRoot, "/"),
		group:    serial.NewGroup(),
		start:    time.Now().Truncate(time.Second), // §8.2.65: one-second resolution
		ues:      shardmap.New[string, *ueState](shardmap.HashString),
		contexts: shardmap.New[string, *smContext](shardmap.HashString),
		seids:    shardmap.New[uint64, *smContext](shardmap.HashUint64),
		recorder: deps.Recorder,
	}
	for _, u := range served.upfs {
		if up, ok := deps.UPFs[u.name]; ok {
			u.up = up
		}
		u.life.Store(newLife(s.group.Context(), 1))
	}
	return s, nil
}

// SetUserPlane sets the N4 client of the UPF named name. It exists because
// the direct binding needs the SMF (as pfcp.CPHandler) to be built first;
// call it before Start.
func (s *SMF) SetUserPlane(name string, up pfcp.UserPlane) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("smf: SetUserPlane after Start")
	}
	for _, u := range s.cfg.upfs {
		if u.name == name {
			u.up = up
			return nil
		}
	}
	return fmt.Errorf("smf: no UPF %q in smf.upfs", name)
}

// Start sets up the PFCP association with every UPF (TS 29.244 §6.2.6) and
// supervises them in the background (restoration.go): heartbeats,
// restoration of a restarted UPF's sessions, association of a UPF that is
// down or not there yet. It fails only when a UPF has no N4 client; a UPF
// that does not answer yet is associated when it appears.
func (s *SMF) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.group.Closed() || s.started {
		s.mu.Unlock()
		return errors.New("smf: already started or closed")
	}
	for _, u := range s.cfg.upfs {
		if u.up == nil {
			s.mu.Unlock()
			return fmt.Errorf("smf: UPF %q has no N4 client (Deps.UPFs or SetUserPlane)", u.name)
		}
	}
	s.started = true
	s.mu.Unlock()

	for _, u := range s.cfg.upfs {
		// The first association is tried here, as long as a heartbeat may
		// take, so that a core whose UPFs are up serves at once; the
		// supervisor takes over from there. Short attempts, so that a UPF
		// starting at the same moment (its socket not bound yet when the
		// first request went out) is associated as soon as it listens.
		// An SMF restored from records (Restore) first takes up the
		// association its records show, when the UPF answers a heartbeat
		// with the Recovery Time Stamp they hold: a new Association Setup
		// would have the UPF delete the sessions (TS 29.244 §6.2.6.2.2).
		if !s.partitionOver(ctx, u) {
			if err := s.associateSoon(ctx, u, s.cfg.timers.HeartbeatTimeout); err != nil {
				s.log.Warn("PFCP association failed; retrying until the UPF answers", "upf", u.name,
					"period", min(associationRetry, s.cfg.timers.Heartbeat), "err", err)
			}
		}
		// Deletions a Restore took over go now: sent again, they end as
		// they would have (a UPF that had deleted the session answers
		// "Session context not found", TS 29.244 §7.2.2.4.2).
		for _, d := range u.restored {
			s.queueDeletion(d)
		}
		u.restored = nil
		s.group.Go(func() { s.superviseUPF(u) })
	}
	return nil
}

// associateSoon tries the association in attempts of at most 250 ms until
// within has passed.
func (s *SMF) associateSoon(ctx context.Context, u *upfNode, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		attempt := min(250*time.Millisecond, time.Until(deadline))
		err := s.associate(ctx, u, attempt)
		if err == nil || ctx.Err() != nil || time.Until(deadline) <= 0 || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
}

// RecoveryTime is the SMF's PFCP Recovery Time Stamp (TS 29.244 §19A): a
// UDP endpoint carrying its N4 must advertise the same one.
func (s *SMF) RecoveryTime() time.Time { return s.start }

// UPFStates tells, by UPF name, whether each UPF is "up", "down" or
// "restoring".
func (s *SMF) UPFStates() map[string]string {
	m := make(map[string]string, len(s.cfg.upfs))
	for _, u := range s.cfg.upfs {
		m[u.name] = u.state().String()
	}
	return m
}

// Close stops timers and background work and waits for the SMF's
// goroutines. Contexts are dropped without signalling.
func (s *SMF) Close() error {
	s.group.Close()
	return nil
}

func (s *SMF) nodeID() pfcp.NodeID {
	if a, err := netip.ParseAddr(s.cfg.nodeID); err == nil {
		return pfcp.NodeID{IP: a}
	}
	return pfcp.NodeID{FQDN: s.cfg.nodeID}
}

// counters are the SMF's statistics (atomics: read without locks).
type counters struct {
	contexts       atomic.Int64
	n4Sessions     atomic.Int64
	policies       atomic.Int64
	established    atomic.Uint64
	rejected       atomic.Uint64
	released       atomic.Uint64
	modified       atomic.Uint64
	usageReports   atomic.Uint64
	dlDataReports  atomic.Uint64
	n4Failures     atomic.Uint64
	amfFailures    atomic.Uint64
	pagingFailures atomic.Uint64
	handovers      atomic.Uint64
	pathSwitches   atomic.Uint64
	deactivations  atomic.Uint64
	activations    atomic.Uint64

	associations                                                atomic.Uint64
	heartbeatsMissed                                            atomic.Uint64
	upfFailures                                                 atomic.Uint64
	sessionsRestored                                            atomic.Uint64
	sessionsNotRestored, sessionsKept                           atomic.Uint64
	restoredSameTEID, uplinksMoved                              atomic.Uint64
	establishmentsHeld                                          atomic.Uint64
	n4Deleting                                                  atomic.Int64
	errorIndicationReports, nodeReports, upFailureDeactivations atomic.Uint64
}

// Stats is a snapshot of the SMF's state and counters.
type Stats struct {
	Contexts   int            // live SM contexts
	IPs        map[string]int // allocated UE addresses per DNN
	N4Sessions int            // PFCP sessions established and not deleted
	Policies   int            // SM policy associations held at the PCF

	Established   uint64 // PDU sessions whose establishment completed (N2 setup answered)
	Rejected      uint64 // PDU Session Establishment Rejects sent
	Released      uint64 // SM contexts removed, for any reason
	Modified      uint64 // modifications completed
	UsageReports  uint64 // PFCP usage reports received
	DLDataReports uint64 // PFCP downlink data reports received
	N4Failures    uint64 // PFCP requests that failed or were rejected
	AMFFailures   uint64 // N1N2MessageTransfer / status notifications that failed
	// PagingFailures counts downlink data whose UE could not be reached:
	// the UPF was told to discard the session's buffer.
	PagingFailures uint64
	Handovers      uint64 // N2 handovers completed (downlink switched to the target)
	PathSwitches   uint64 // Xn path switches done
	// Deactivations and Activations count user planes taken down with an
	// AN release (the UPF buffers from then) and brought back by a
	// service request.
	Deactivations, Activations uint64

	// N4 supervision (restoration.go): associations set up (first ones
	// included), heartbeats that timed out, UPFs marked down after
	// missing HeartbeatRetries in a row, and PFCP sessions established
	// again at a restarted UPF, released because the UPF refused that,
	// or kept for the UPF's next association because it was gone again.
	Associations, HeartbeatsMissed, UPFFailures uint64
	SessionsRestored, SessionsNotRestored       uint64
	SessionsKept                                uint64
	// Of the sessions restored (disjoint): RestoredSameTEID kept their
	// uplink F-TEID (RESTI, or a CHOOSE that gave the same one),
	// UplinksMoved got another one that the 5G-AN is sent in a PDU
	// Session Resource Modify Request.
	RestoredSameTEID, UplinksMoved uint64
	// EstablishmentsHeld counts establishments that waited for a UPF
	// (none up for the DNN, or one that had lost its association);
	// Waiting is how many wait now (wait.go).
	EstablishmentsHeld uint64
	Waiting            int
	// N4Deleting is how many PFCP session deletions are queued or await
	// the UPF's answer (each bounded by Timers.PFCPTimeout once sent, at
	// most 64 sent at once per UPF). QuarantinedIPs are the UE addresses
	// of sessions whose deletion the UPF neither confirmed nor proved
	// needless: held back from the pools until the UPF restarts.
	N4Deleting     int
	QuarantinedIPs int
	// ErrorIndicationReports and NodeReports count PFCP reports of a
	// broken N3 tunnel (a gNB's GTP-U Error Indication) and of node
	// events (user plane path failure or recovery); UPFailureDeactivations
	// the user planes they took down (TS 23.527 §5).
	ErrorIndicationReports, NodeReports, UPFailureDeactivations uint64
}

// Stats returns a snapshot.
func (s *SMF) Stats() Stats {
	st := Stats{
		Contexts:      int(s.stats.contexts.Load()),
		IPs:           make(map[string]int, len(s.cfg.order)),
		N4Sessions:    int(s.stats.n4Sessions.Load()),
		Policies:      int(s.stats.policies.Load()),
		Established:   s.stats.established.Load(),
		Rejected:      s.stats.rejected.Load(),
		Released:      s.stats.released.Load(),
		Modified:      s.stats.modified.Load(),
		UsageReports:  s.stats.usageReports.Load(),
		DLDataReports: s.stats.dlDataReports.Load(),
		N4Failures:    s.stats.n4Failures.Load(),
		AMFFailures:   s.stats.amfFailures.Load(),

		PagingFailures: s.stats.pagingFailures.Load(),
		Handovers:      s.stats.handovers.Load(),
		PathSwitches:   s.stats.pathSwitches.Load(),
		Deactivations:  s.stats.deactivations.Load(),
		Activations:    s.stats.activations.Load(),

		Associations:           s.stats.associations.Load(),
		HeartbeatsMissed:       s.stats.heartbeatsMissed.Load(),
		UPFFailures:            s.stats.upfFailures.Load(),
		SessionsRestored:       s.stats.sessionsRestored.Load(),
		SessionsNotRestored:    s.stats.sessionsNotRestored.Load(),
		SessionsKept:           s.stats.sessionsKept.Load(),
		RestoredSameTEID:       s.stats.restoredSameTEID.Load(),
		UplinksMoved:           s.stats.uplinksMoved.Load(),
		EstablishmentsHeld:     s.stats.establishmentsHeld.Load(),
		Waiting:                s.waiting.len(),
		N4Deleting:             int(s.stats.n4Deleting.Load()),
		ErrorIndicationReports: s.stats.errorIndicationReports.Load(),
		NodeReports:            s.stats.nodeReports.Load(),
		UPFailureDeactivations: s.stats.upFailureDeactivations.Load(),
	}
	for _, d := range s.cfg.order {
		st.IPs[d.name] = d.pool.allocated()
	}
	for _, u := range s.cfg.upfs {
		st.QuarantinedIPs += u.quarantine.len()
	}
	return st
}
