package smf

// N4 supervision and restoration (TS 29.244 §6.2.2, §6.2.6; TS 23.527
// §4.3.2; TS 23.007 §20).
//
// Each UPF has one supervisor goroutine and one explicit state:
//
//	down ──association accepted──▶ up ◀──restoration done── restoring
//	 ▲                              │                            ▲
//	 └──HeartbeatRetries missed─────┤                            │
//	                                └──new Recovery Time Stamp───┘
//	                                   (re-associated first)
//
// While down or restoring a UPF is not selected for new PDU sessions
// (another UPF serving the DNN is); its sessions stay in the SMF. A UPF
// that answers again with the Recovery Time Stamp the SMF knows lost
// nothing: it is up again and its sessions stand. One whose Recovery Time
// Stamp changed restarted and lost every PFCP session (TS 23.527 §4.3.2);
// so did one that answers a session request "No established PFCP
// Association" with the stamp it had. Either way its life ends (life.go:
// the N4 requests still in flight for its sessions stop), the association
// is set up again, and each session is established again on its UE's
// executor with the UE IP and rules it had and an uplink F-TEID the gNB
// can use (restoreN4), so the UE sees nothing. A session the UPF refuses
// is released towards the UE with 5GSM cause #39 "reactivation requested"
// so that the UE establishes it again (TS 24.501 §6.3.3.2); one the UPF
// does not answer (gone again) is kept for its next association.
// Establishments meanwhile wait for the UPF (wait.go).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
)

// upfState is where the SMF stands with one UPF.
type upfState int32

const (
	upfDown      upfState = iota // not associated (never was, or stopped answering)
	upfUp                        // associated: serves new sessions
	upfRestoring                 // associated again after a restart; its sessions are being re-established
)

func (s upfState) String() string {
	switch s {
	case upfDown:
		return "down"
	case upfUp:
		return "up"
	case upfRestoring:
		return "restoring"
	}
	return "state?"
}

func (u *upfNode) state() upfState       { return upfState(u.st.Load()) }
func (u *upfNode) setState(st upfState)  { u.st.Store(int32(st)) }
func (u *upfNode) serving() bool         { return u.state() == upfUp }
func (u *upfNode) knownRecovery() string { return u.recovery.Format(time.RFC3339) }

// associationRetry is how often a UPF that is down is asked to associate
// (the heartbeat period when that is shorter): a UPF started after its SMF,
// or back from a failure, serves within about a second rather than a
// heartbeat period, for one small request a second while it is away.
const associationRetry = time.Second

// superviseUPF is u's supervisor: it associates while u is down, sends
// heartbeats while it is up, and restores u's sessions when it restarted.
// It is the only writer of u's state and recovery time. An association
// attempt is a liveness probe like a heartbeat and waits as long.
func (s *SMF) superviseUPF(u *upfNode) {
	ctx := s.group.Context()
	next := func() time.Duration {
		if u.state() == upfDown {
			return min(associationRetry, s.cfg.timers.Heartbeat)
		}
		return s.cfg.timers.Heartbeat
	}
	t := time.NewTimer(next())
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-u.check:
			t.Stop() // Go ≥ 1.23: no stale expiry is received after Stop or Reset
		}
		t.Reset(next())
		if u.state() == upfDown {
			if s.partitionOver(ctx, u) {
				continue
			}
			if err := s.associate(ctx, u, s.cfg.timers.HeartbeatTimeout); err != nil && ctx.Err() == nil {
				s.log.Debug("PFCP association retry failed", "upf", u.name, "err", err)
			}
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, s.cfg.timers.HeartbeatTimeout)
		rec, err := u.up.Heartbeat(hctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			missed++
			s.stats.heartbeatsMissed.Add(1)
			if missed >= s.cfg.timers.HeartbeatRetries {
				missed = 0
				u.setState(upfDown)
				s.stats.upfFailures.Add(1)
				s.log.Warn("UPF not answering heartbeats; no new sessions on it until it is back",
					"upf", u.name, "missed", s.cfg.timers.HeartbeatRetries, "err", err)
			}
		case restarted(u.recovery, rec):
			missed = 0
			// TS 23.527 §4.3.2: the association is gone with the UPF's
			// state; set it up again, then restore the sessions.
			s.log.Warn("UPF restarted (new Recovery Time Stamp); re-associating and restoring its sessions",
				"upf", u.name, "was", u.knownRecovery(), "now", rec.Format(time.RFC3339))
			s.lifeLost(u)
			s.changeUPF(u, func() { u.recovery = rec })
			if err := s.associate(ctx, u, s.cfg.timers.HeartbeatTimeout); err != nil && ctx.Err() == nil {
				s.log.Warn("PFCP association with the restarted UPF failed; will retry", "upf", u.name, "err", err)
			}
		case u.unassociated.Load() != 0:
			missed = 0
			if wait := time.Until(u.associatedAt.Add(min(associationRetry, s.cfg.timers.Heartbeat))); wait > 0 {
				// A UPF that refuses sessions for want of an association
				// right after one was set up is broken, not restarted:
				// one association a retry period, not one per refusal.
				t.Reset(wait)
				continue
			}
			if !u.unassociatedNow() {
				continue // an association was set up since
			}
			// TS 29.244 §6.3.2.2: session requests need the association;
			// the UPF has none with the SMF although it did not restart
			// (it released it, or lost it some other way), and with it
			// the sessions of the SMF. Set it up again and restore them:
			// without this, every establishment sent there would be
			// refused until UPFWait.
			s.log.Warn("UPF answered that it has no PFCP association with the SMF, with the Recovery Time Stamp it had; re-associating and restoring its sessions",
				"upf", u.name, "recovery", u.knownRecovery())
			s.lifeLost(u)
			if err := s.associate(ctx, u, s.cfg.timers.HeartbeatTimeout); err != nil && ctx.Err() == nil {
				s.log.Warn("PFCP association with the UPF failed; will retry", "upf", u.name, "err", err)
			}
		default:
			missed = 0
		}
	}
}

// partitionOver tells whether u, down for missed heartbeats (or in an SMF
// restored from records, not associated by this process yet), answers one
// again with the Recovery Time Stamp it had: it did not restart, so its
// association and sessions stand (TS 29.244 §19A) and it serves again as
// it is. A new Association Setup would instead replace the association,
// and the UPF delete its sessions with it (§6.2.6.2.2; tern's UPF-C
// does): the SMF would then believe in sessions the UPF no longer has.
// A UPF never associated, one whose sessions wait for restoration, or one
// that answers with another stamp needs the association: false.
func (s *SMF) partitionOver(ctx context.Context, u *upfNode) bool {
	if u.epoch.Load() == 0 || u.mustRestore || u.recovery.IsZero() {
		return false
	}
	hctx, cancel := context.WithTimeout(ctx, s.cfg.timers.HeartbeatTimeout)
	rec, err := u.up.Heartbeat(hctx)
	cancel()
	if err != nil || rec.IsZero() || restarted(u.recovery, rec) {
		return false
	}
	s.log.Info("UPF answers heartbeats with the Recovery Time Stamp it had; its association and sessions stand",
		"upf", u.name, "recovery", u.knownRecovery())
	u.setState(upfUp)
	s.wakeWaiting(u)
	return true
}

// lifeLost records that u lost its state: its life ends before the SMF
// associates again, and its sessions wait for their restoration. Run by
// u's supervisor.
func (s *SMF) lifeLost(u *upfNode) {
	u.setState(upfDown)
	s.changeUPF(u, func() {
		s.endLife(u)
		u.mustRestore = true
	})
}

// lostState is what a UPF that answers a session request sent in
// association epoch with cause says about itself: it has no association
// or no such session, so it most likely restarted since the last
// heartbeat. The supervisor is woken for a heartbeat now rather than at
// the next period, so that restoration starts at once (the request that
// found out still fails). "No established PFCP Association" with the
// Recovery Time Stamp unchanged makes the supervisor associate again, if
// no association was set up since the request went.
func (u *upfNode) lostState(cause pfcp.Cause, epoch uint64) {
	if !lostAssociation(cause) {
		return
	}
	if cause == pfcp.CauseNoEstablishedPFCPAssociation {
		u.unassociated.Store(epoch + 1)
	}
	select {
	case u.check <- struct{}{}:
	default: // a check is already due
	}
}

// unassociatedNow tells, once, whether the UPF answered in the current
// association epoch that it has no association.
func (u *upfNode) unassociatedNow() bool {
	e := u.unassociated.Swap(0)
	return e != 0 && e-1 == u.epoch.Load()
}

// restarted tells whether a peer that advertised was now advertises now:
// any change, backwards included, means it lost its state (TS 29.244
// §19A). A zero time on either side is "unknown" (the direct binding).
func restarted(was, now time.Time) bool {
	return !was.IsZero() && !now.IsZero() && !now.Equal(was)
}

// errRestorationInterrupted ends an association whose restoration found
// the UPF gone again.
var errRestorationInterrupted = errors.New("restoration interrupted: the UPF is gone again")

// associate sets up the PFCP association with u (TS 29.244 §6.2.6.2),
// waiting at most timeout for the answer, and, when u's Recovery Time Stamp
// shows that it restarted since the last association, or its sessions
// wait for restoration for another reason, restores them before u serves
// again.
func (s *SMF) associate(ctx context.Context, u *upfNode, timeout time.Duration) error {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := u.up.SetupAssociation(actx, &pfcp.AssociationSetupRequest{
		NodeID:       s.nodeID(),
		RecoveryTime: s.start,
	})
	if err != nil {
		return fmt.Errorf("upf %s: association setup: %w", u.name, err)
	}
	if !resp.Cause.Accepted() {
		return fmt.Errorf("upf %s: association setup rejected: %s", u.name, resp.Cause)
	}
	if restarted(u.recovery, resp.RecoveryTime) {
		// A restart seen first here (the UPF was down), or another one
		// since the one the supervisor saw.
		s.lifeLost(u)
	}
	var prev uint64
	var first bool
	s.changeUPF(u, func() {
		id := resp.NodeID
		u.nodeID.Store(&id)
		prev = u.features.Swap(resp.UPFunctionFeatures)
		first = u.epoch.Add(1) == 1
		if !resp.RecoveryTime.IsZero() {
			u.recovery = resp.RecoveryTime
		}
	})
	u.associatedAt = time.Now()
	s.stats.associations.Add(1)
	s.log.Info("PFCP association set up", "upf", u.name, "peer", resp.NodeID.String(), "recovery", u.knownRecovery())
	if resp.UPFunctionFeatures&upFeatureFTUP == 0 && (first || prev&upFeatureFTUP != 0) {
		// TS 29.244 §5.5.1: in 5GC only the UPF allocates F-TEIDs, and it
		// says so with FTUP. The SMF asks it to CHOOSE all the same.
		s.log.Warn("UPF does not advertise F-TEID allocation (FTUP, TS 29.244 §5.5.1); sessions still ask it to choose their F-TEIDs, and restored ones get new ones the gNB is sent",
			"upf", u.name, "restoration", u.restoration)
	}
	if u.mustRestore {
		u.setState(upfRestoring)
		if !s.restoreSessions(ctx, u) {
			u.setState(upfDown)
			return fmt.Errorf("upf %s: %w", u.name, errRestorationInterrupted)
		}
		s.changeUPF(u, func() { u.mustRestore = false })
	}
	u.setState(upfUp)
	// Establishments that waited for a UPF go now (wait.go).
	s.wakeWaiting(u)
	return nil
}

// restoreWindow bounds the UEs whose sessions are being re-established at
// once: all of them at once would be a burst of establishments that
// overflows the UPF's socket buffer and waits for PFCP retransmissions.
const restoreWindow = 64

// restoreSessions establishes again, at u, every PFCP session the SMF had
// there that u's current life does not hold (it went with an earlier life,
// or an interrupted restoration kept it), one per UE executor and all UEs
// in parallel, and returns when all are done (TS 23.527 §4.3.2: "the SMF
// may start re-establishing PFCP sessions ... immediately after the PFCP
// association setup"). When one finds the UPF gone again (no answer, or
// no association), the rest are not sent and all are kept for u's next
// association: restoreSessions returns false.
func (s *SMF) restoreSessions(ctx context.Context, u *upfNode) bool {
	start := time.Now()
	rctx, abort := context.WithCancel(ctx)
	defer abort()
	life := u.life.Load()
	var wg sync.WaitGroup
	var restored, released, kept atomic.Int64
	window := make(chan struct{}, restoreWindow)
	for _, ue := range s.ues.All() {
		wg.Add(1)
		if !ue.exec.Post(func() {
			defer wg.Done()
			window <- struct{}{}
			defer func() { <-window }()
			for _, c := range ue.sessions {
				if c.upf != u || !(c.n4Lost || c.upSEID != 0 && c.upLife != life) {
					continue
				}
				err := s.restoreN4(rctx, c)
				switch {
				case err == nil:
					restored.Add(1)
				case waitsForUPF(err):
					kept.Add(1)
					if rctx.Err() == nil {
						s.log.Warn("PFCP session restoration found the UPF gone again; its sessions wait for its next association",
							"supi", c.supi, "psi", c.psi, "upf", u.name, "err", err)
					}
					abort()
				default:
					released.Add(1)
					s.log.Warn("PFCP session not restored; releasing the PDU session for the UE to establish again",
						"supi", c.supi, "psi", c.psi, "upf", u.name, "err", err)
					s.networkRelease(c, nas.CauseReactivationRequested)
				}
			}
			s.endStep(ue)
		}) {
			wg.Done() // closing
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return false
	}
	s.stats.sessionsRestored.Add(uint64(restored.Load()))
	s.stats.sessionsNotRestored.Add(uint64(released.Load()))
	s.stats.sessionsKept.Add(uint64(kept.Load()))
	s.log.Info("PFCP sessions restored", "upf", u.name, "restored", restored.Load(), "released", released.Load(),
		"kept", kept.Load(), "took", time.Since(start).Round(time.Microsecond))
	return kept.Load() == 0
}

// restoresWithRESTI tells how u restores a session's uplink F-TEID
// (UPFConfig.Restoration): with the F-TEID the gNB has and RESTI, or with
// CHOOSE. Automatically, RESTI where u advertised FTUP.
func (u *upfNode) restoresWithRESTI() bool {
	switch u.restoration {
	case RestorationRESTI:
		return true
	case RestorationChoose:
		return false
	}
	return u.features.Load()&upFeatureFTUP != 0
}

// restoreN4 establishes c's PFCP session again at its restarted UPF, with
// the same UE IP and rules, and the downlink where it was: forwarding to
// the gNB, buffering for an idle UE, or dropping while an unreachable UE's
// paging backs off. Runs on c's executor.
//
// The uplink F-TEID is the gNB's end of the N3 tunnel. tern's SMF always
// has the UPF allocate it (CHOOSE, TS 29.244 §5.5.1: in 5GC only the UP
// function allocates F-TEIDs), and a restarted UPF counts its TEIDs from
// scratch, so the F-TEID must not go back as the SMF's own choice: a UPF
// that does not know it as its own hands it to its next new session, and
// both UEs' uplink meet in one tunnel. Where the UPF takes RESTI
// (restoresWithRESTI) the old F-TEID goes with it (§8.2.136; TS 23.527
// §4.3.2: the UPF re-establishes the session with the F-TEID it had
// allocated and keeps it from new sessions), and the gNB sees nothing.
// Otherwise, or when the UPF refuses the old F-TEID, the UPF chooses a new
// one (CHOOSE) and the gNB is told (moveUplink). Indirect forwarding
// tunnels of a handover in progress are not restored: the handover's own
// timer ends them.
func (s *SMF) restoreN4(ctx context.Context, c *smContext) error {
	if c.upSEID != 0 {
		// The old session died with the UPF's life.
		c.upSEID = 0
		c.upf.sessions.Add(-1)
		s.stats.n4Sessions.Add(-1)
	}
	c.n4Lost = false
	c.fwd = false
	ul := c.ulTunnel
	err := s.restoreUplink(ctx, c, ul)
	if err != nil && waitsForUPF(err) {
		c.n4Lost = true // kept for the UPF's next association
		c.ulTunnel = ul // what the gNB still has
	}
	return err
}

func (s *SMF) restoreUplink(ctx context.Context, c *smContext, ul ngap.GTPTunnel) error {
	timeout := s.cfg.timers.PFCPTimeout
	if c.upf.restoresWithRESTI() {
		req := s.restorationRequest(c)
		req.CreatePDRs[0].PDI.FTEID = &pfcp.FTEID{TEID: ul.TEID, IPv4: ul.Addr}
		req.RESTI = true
		err := s.runEstablishment(ctx, c, req, timeout)
		switch {
		case err == nil:
			s.settleRestoredUplink(c, ul)
			return nil
		case waitsForUPF(err):
			return err // the UPF is gone again
		}
		s.log.Info("restarted UPF refused the session's F-TEID; restoring with a new one", "supi", c.supi, "psi", c.psi,
			"upf", c.upf.name, "teid", ul.TEID, "err", err)
	}
	// Only the Created PDR gives the new F-TEID: an answer without one
	// fails (runEstablishment).
	c.ulTunnel = ngap.GTPTunnel{}
	if err := s.runEstablishment(ctx, c, s.restorationRequest(c), timeout); err != nil {
		return err
	}
	s.settleRestoredUplink(c, ul)
	return nil
}

// settleRestoredUplink counts a restored session by whether its uplink
// F-TEID is still ul, the one the gNB has, and has the gNB told when not.
func (s *SMF) settleRestoredUplink(c *smContext, ul ngap.GTPTunnel) {
	if c.ulTunnel == ul {
		s.stats.restoredSameTEID.Add(1)
		return
	}
	s.moveUplink(c)
}

// restorationRequest is c's establishment request with the downlink FAR
// where the session's downlink stands (the uplink F-TEID is CHOOSE).
func (s *SMF) restorationRequest(c *smContext) *pfcp.SessionEstablishmentRequest {
	req := s.establishmentRequest(c)
	dl := &req.CreateFARs[1]
	switch {
	case c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATED && c.dlTunnel.Addr.IsValid():
		*dl = pfcp.CreateFAR{ID: farDownlink, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{
			Destination: pfcp.InterfaceAccess,
			OuterHeaderCreation: &pfcp.OuterHeaderCreation{
				Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: c.dlTunnel.TEID, IPv4: c.dlTunnel.Addr,
			},
		}}
	case c.dl == dlDiscarding:
		*dl = pfcp.CreateFAR{ID: farDownlink, ApplyAction: pfcp.ActionDrop}
	case c.state != stEstablishing && c.state != stWaitN2Setup:
		// Idle (or activating): buffer and report the first packet so that
		// the UE is paged (TS 23.502 §4.2.3.3).
		dl.ApplyAction = pfcp.ActionBuffer | pfcp.ActionNotifyCP
	}
	return req
}

// moveUplink has the 5G-AN send c's uplink to the F-TEID the restored
// session got (c.ulTunnel): at once when the user plane is up, else once
// it is (settleUplink). A UE without user plane needs nothing: its next
// activation carries c.ulTunnel (TS 23.502 §4.2.3.2 step 4). Runs on c's
// executor.
func (s *SMF) moveUplink(c *smContext) {
	s.stats.uplinksMoved.Add(1)
	c.ulMoved = true
	s.settleUplink(c)
}

// settleUplink sends a moved uplink F-TEID (c.ulMoved) to the 5G-AN once
// the session's user plane is up and no handover or modification is
// under way: an N2-only PDU Session Resource Modify Request whose transfer
// carries the UL NG-U UP TNL Modify List (TS 23.502 §4.3.3.2 step 3b, TS
// 38.413 §8.2.3, §9.3.4.3), through Namf_Communication_N1N2MessageTransfer.
// An activation or a handover that was already under way carried the old
// F-TEID; it is sent when that ends. While a modification runs its own
// N2 answer is awaited, and the move would be taken for it: the move is
// sent when the modification ends (runPending). The 5G-AN's answer comes
// back as PDU_RES_MOD_RSP or PDU_RES_MOD_FAIL while c.ulMoving (handleN2).
// A session whose user plane goes needs nothing more: its next activation
// carries c.ulTunnel. Runs on c's executor.
func (s *SMF) settleUplink(c *smContext) {
	if !c.ulMoved {
		return
	}
	switch {
	case c.state == stReleasing || c.state == stReleased || c.upCnx == models.Smf_PDUSess_UpCnxState_DEACTIVATED:
		c.ulMoved = false
	case c.state == stModifying || c.ulMoving:
		// After the modification's, or the previous move's, answer.
	case c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATED && c.ho == hoNone && c.dlTunnel.Addr.IsValid():
		c.ulMoved = false
		n2, err := ngap.EncodeModifyRequestTransfer(&ngap.PDUSessionResourceModifyRequestTransfer{
			ULTunnels: []ngap.ULTunnelModifyItem{{UL: c.ulTunnel, DL: c.dlTunnel}},
		})
		if err != nil {
			s.log.Warn("new uplink tunnel not encoded; deactivating the user plane", "supi", c.supi, "psi", c.psi, "err", err)
			s.userPlaneFailed(c, "new uplink tunnel not encoded")
			return
		}
		s.log.Info("uplink tunnel moved by the UPF's restoration; telling the 5G-AN", "supi", c.supi, "psi", c.psi,
			"teid", c.ulTunnel.TEID)
		c.ulMoving = true
		s.send(c, n1n2{n2: n2, n2Type: models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ}, func() {
			// The gNB keeps sending to the old F-TEID: take the user
			// plane down, so that the next activation carries the new one.
			c.ulMoving = false
			s.userPlaneFailed(c, "new uplink tunnel not delivered")
		})
	}
}

// uplinkMoveAnswered handles the 5G-AN's answer to the uplink move
// (settleUplink): a refusal leaves the gNB sending to the old F-TEID, which
// the restored session no longer has, so the user plane is taken down
// and the next activation carries the new one (TS 23.502 §4.2.3.2 step 4).
// Runs on c's executor.
func (s *SMF) uplinkMoveAnswered(c *smContext, refused bool, cause string) {
	c.ulMoving = false
	if !refused {
		return
	}
	s.log.Warn("5G-AN refused the restored session's new uplink tunnel; deactivating the user plane", "supi", c.supi,
		"psi", c.psi, "teid", c.ulTunnel.TEID, "cause", cause)
	s.userPlaneFailed(c, "5G-AN refused the new uplink tunnel")
}
