package smf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/pfcp"
)

// selectUPF picks the associated UPF serving d with the fewest sessions
// (TS 23.501 §6.3.3 UPF selection, by DNN and load), passing over those
// in avoid that have not associated again since they failed the
// establishment (wait.go).
func selectUPF(d *dnnConf, avoid []avoidedUPF) *upfNode {
	var best *upfNode
	for _, u := range d.upfs {
		if !u.serving() || avoids(avoid, u) {
			continue
		}
		if best == nil || u.sessions.Load() < best.sessions.Load() {
			best = u
		}
	}
	return best
}

// establishmentRequest is the PFCP Session Establishment Request of a new
// PDU session (TS 23.502 §4.3.2.2.1 step 10a; TS 29.244 §7.5.2):
//   - UL PDR: from access, F-TEID chosen by the UPF, outer GTP-U removed,
//     QFI of the default flow -> FAR forward to core on the DNN's network
//     instance (N6).
//   - DL PDR: from core (the DNN's network instance), destination = UE IP
//     -> FAR buffering until the gNB tunnel is known (step 16a turns it to
//     forward).
//   - one QER with the session AMBR as MBR (TS 23.501 §5.7.2.6: the UPF
//     enforces the session AMBR), one volume-measuring URR on both PDRs.
func (s *SMF) establishmentRequest(c *smContext) *pfcp.SessionEstablishmentRequest {
	ohr := pfcp.OuterHeaderRemovalGTPUUDPIPv4
	bar := uint8(barSession)
	return &pfcp.SessionEstablishmentRequest{
		NodeID:  s.nodeID(),
		CPFSEID: pfcp.FSEID{SEID: c.cpSEID, IPv4: s.cfg.n4Addr},
		CreatePDRs: []pfcp.CreatePDR{
			{
				ID:         pdrUplink,
				Precedence: defaultPrecedence,
				PDI: pfcp.PDI{
					SourceInterface: pfcp.InterfaceAccess,
					FTEID:           &pfcp.FTEID{Choose: true, ChooseID: 1},
					UEIP:            &pfcp.UEIPAddress{IPv4: c.ueIP},
					QFIs:            []uint8{defaultQFI},
				},
				OuterHeaderRemoval: &ohr,
				FARID:              farUplink,
				QERIDs:             []uint32{qerSession},
				URRIDs:             []uint32{urrSession},
			},
			{
				ID:         pdrDownlink,
				Precedence: defaultPrecedence,
				PDI: pfcp.PDI{
					SourceInterface: pfcp.InterfaceCore,
					NetworkInstance: c.dnn.name,
					UEIP:            &pfcp.UEIPAddress{IPv4: c.ueIP, Destination: true},
				},
				FARID:  farDownlink,
				QERIDs: []uint32{qerSession},
				URRIDs: []uint32{urrSession},
			},
		},
		CreateFARs: []pfcp.CreateFAR{
			{
				ID:          farUplink,
				ApplyAction: pfcp.ActionForward,
				Forwarding:  &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: c.dnn.name},
			},
			{ID: farDownlink, ApplyAction: pfcp.ActionBuffer, BARID: &bar},
		},
		CreateQERs: []pfcp.CreateQER{{ID: qerSession, MBR: mbr(c.qos), QFI: defaultQFI}},
		CreateURRs: []pfcp.CreateURR{{ID: urrSession, Method: pfcp.MethodVolume}},
		CreateBAR:  &pfcp.CreateBAR{ID: barSession, SuggestedBufferingPackets: uint8(s.cfg.mobility.BufferingPackets)},
		PDNType:    pfcp.PDNTypeIPv4,
	}
}

func mbr(q qos) *pfcp.BitRate { return &pfcp.BitRate{UL: kbps(q.ambr.UL), DL: kbps(q.ambr.DL)} }

// errN4 wraps PFCP failures so callers can tell them from others;
// errNoAnswer, inside it, a request the UPF did not answer in time.
var (
	errN4       = errors.New("n4")
	errNoAnswer = errors.New("no answer")
)

// n4Rejection is a PFCP request the UPF answered with a cause other than
// acceptance (wrapped in errN4); other N4 errors mean no answer came.
type n4Rejection struct {
	cause       pfcp.Cause
	offendingIE uint16
}

func (r *n4Rejection) Error() string {
	if r.offendingIE != 0 {
		return fmt.Sprintf("rejected: %s (offending IE %d)", r.cause, r.offendingIE)
	}
	return "rejected: " + r.cause.String()
}

// lostAssociation tells whether a UPF answering with cause lost the
// state the SMF has there: it has no association with the SMF, or not
// the session (TS 29.244 §6.3.2.2, §7.2.2.4.2): most likely it restarted.
func lostAssociation(cause pfcp.Cause) bool {
	return cause == pfcp.CauseNoEstablishedPFCPAssociation || cause == pfcp.CauseSessionContextNotFound
}

// upFeatureFTUP is the FTUP bit of the UP Function Features (TS 29.244
// §8.2.25, octet 5 bit 5) as pfcp.AssociationSetupResponse packs them:
// the UPF allocates F-TEIDs.
const upFeatureFTUP uint64 = 1 << 4

// establishN4 runs the PFCP Session Establishment for c and records the UPF
// SEID and uplink tunnel. Runs on c's executor.
func (s *SMF) establishN4(c *smContext) error {
	return s.runEstablishment(s.group.Context(), c, s.establishmentRequest(c), s.establishmentTimeout(c))
}

// establishmentTimeout bounds the N4 attempt of c's establishment: the
// PFCP deadline, and for an establishment that has waited for a UPF what
// is left of its wait (Timers.UPFWait from the request), so that it is
// answered by then (must the UPF not answer).
func (s *SMF) establishmentTimeout(c *smContext) time.Duration {
	d := s.cfg.timers.PFCPTimeout
	if c.waited {
		d = min(d, time.Until(c.establishing.Add(s.cfg.timers.UPFWait)))
	}
	return d
}

// runEstablishment sends req for c, within ctx, timeout and the UPF's
// current life, and records what the UPF answered: its SEID and, where it
// chose it, the uplink F-TEID.
func (s *SMF) runEstablishment(ctx context.Context, c *smContext, req *pfcp.SessionEstablishmentRequest, timeout time.Duration) error {
	u := c.upf
	life, epoch := u.life.Load(), u.epoch.Load()
	ctx, cancel, err := n4Context(ctx, life, timeout)
	if err != nil {
		s.stats.n4Failures.Add(1)
		return fmt.Errorf("%w: upf %s: session establishment not sent: %w", errN4, u.name, err)
	}
	defer cancel()
	resp, err := u.up.EstablishSession(ctx, req)
	if err != nil {
		s.stats.n4Failures.Add(1)
		return fmt.Errorf("%w: upf %s: session establishment: %w: %w", errN4, u.name, errNoAnswer, err)
	}
	if !resp.Cause.Accepted() {
		s.stats.n4Failures.Add(1)
		u.lostState(resp.Cause, epoch)
		return fmt.Errorf("%w: upf %s: session establishment %w", errN4, u.name, &n4Rejection{resp.Cause, resp.OffendingIE})
	}
	if resp.UPFSEID == nil {
		// The session exists at the UPF but cannot be addressed: nothing to delete.
		s.stats.n4Failures.Add(1)
		return fmt.Errorf("%w: upf %s: establishment response without UP F-SEID", errN4, u.name)
	}
	c.upSEID, c.upLife = resp.UPFSEID.SEID, life
	u.sessions.Add(1)
	s.stats.n4Sessions.Add(1)
	for _, p := range resp.CreatedPDRs {
		if p.ID == pdrUplink && p.LocalFTEID != nil {
			c.ulTunnel = ngap.GTPTunnel{Addr: p.LocalFTEID.IPv4, TEID: p.LocalFTEID.TEID}
		}
	}
	if c.ulTunnel.TEID == 0 && !c.ulTunnel.Addr.IsValid() {
		s.deleteN4(c)
		return fmt.Errorf("%w: upf %s: no Created PDR with the uplink F-TEID", errN4, u.name)
	}
	if !c.ulTunnel.Addr.IsValid() {
		c.ulTunnel.Addr = u.n3
	}
	return nil
}

// sendModification sends req for c's PFCP session, within the PFCP
// deadline and the life of the UPF the session was established in, and
// returns the UPF's answer if it accepted it. Runs on c's executor.
func (s *SMF) sendModification(c *smContext, what string, req *pfcp.SessionModificationRequest) (*pfcp.SessionModificationResponse, error) {
	if c.upSEID == 0 {
		return nil, fmt.Errorf("%w: %s: no PFCP session", errN4, what)
	}
	u := c.upf
	epoch := u.epoch.Load()
	ctx, cancel, err := n4Context(s.group.Context(), c.upLife, s.cfg.timers.PFCPTimeout)
	if err != nil {
		s.stats.n4Failures.Add(1)
		return nil, fmt.Errorf("%w: upf %s: %s not sent: %w", errN4, u.name, what, err)
	}
	defer cancel()
	resp, err := u.up.ModifySession(ctx, c.upSEID, req)
	if err != nil {
		s.stats.n4Failures.Add(1)
		return nil, fmt.Errorf("%w: upf %s: %s: %w", errN4, u.name, what, err)
	}
	if !resp.Cause.Accepted() {
		s.stats.n4Failures.Add(1)
		u.lostState(resp.Cause, epoch)
		return nil, fmt.Errorf("%w: upf %s: %s rejected: %s", errN4, u.name, what, resp.Cause)
	}
	return resp, nil
}

// modifyN4 sends a PFCP Session Modification Request for c. Runs on c's
// executor.
func (s *SMF) modifyN4(c *smContext, req *pfcp.SessionModificationRequest) error {
	resp, err := s.sendModification(c, "session modification", req)
	if err != nil {
		return err
	}
	s.countUsage(c.supi, c.psi, resp.UsageReports)
	return nil
}

// forwardDownlink points the downlink FAR at the gNB tunnel (TS 23.502
// §4.3.2.2.1 step 16a, §4.2.3.2 step 12).
func (s *SMF) forwardDownlink(c *smContext, dl ngap.GTPTunnel) error {
	return s.pointDownlink(c, dl, false)
}

// pointDownlink sets the downlink FAR to forward to tunnel dl, with End
// Marker on the tunnel it leaves when endMarker is set (SNDEM).
func (s *SMF) pointDownlink(c *smContext, dl ngap.GTPTunnel, endMarker bool) error {
	act := pfcp.ActionForward
	return s.modifyN4(c, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{
			ID:          farDownlink,
			ApplyAction: &act,
			Forwarding: &pfcp.UpdateForwardingParameters{
				Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{
					Description: pfcp.OuterHeaderCreationGTPUUDPIPv4,
					TEID:        dl.TEID,
					IPv4:        dl.Addr,
				},
				SendEndMarker: endMarker,
			},
		}},
	})
}

// bufferDownlink makes the UPF buffer downlink data and notify the SMF
// (AN release, TS 23.502 §4.2.6 step 6: the SMF asks the UPF to buffer or
// drop, and to report the first downlink packet for paging).
func (s *SMF) bufferDownlink(c *smContext) error {
	act := pfcp.ActionBuffer | pfcp.ActionNotifyCP
	bar := uint8(barSession)
	return s.modifyN4(c, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: farDownlink, ApplyAction: &act, BARID: &bar}},
	})
}

// updateMBR applies a new session AMBR (TS 23.502 §4.3.3.2 step 4).
func (s *SMF) updateMBR(c *smContext, q qos) error {
	return s.modifyN4(c, &pfcp.SessionModificationRequest{
		UpdateQERs: []pfcp.UpdateQER{{ID: qerSession, MBR: mbr(q)}},
	})
}

// deleteN4 deletes c's PFCP session, if any (TS 23.502 §4.3.4.2 step 2).
// The SMF forgets the session at once; the deletion itself runs beside
// the UE's executor (deletionQueue), bounded by the PFCP deadline, so that
// a UPF that is slow to answer, or never answers a deletion it fails (some
// UPFs send nothing then), holds up neither this UE's next procedure nor
// the AMF releasing it: it costs one deadline, counted in N4Failures and
// logged, and is not retried. A session whose UPF's life has ended (it
// restarted) is gone with it: nothing is sent. releaseAddress waits for
// the deletion's end. Runs on c's executor.
func (s *SMF) deleteN4(c *smContext) {
	if c.upSEID == 0 {
		return
	}
	d := &n4Deletion{upf: c.upf, seid: c.upSEID, life: c.upLife, supi: c.supi, psi: c.psi}
	c.upSEID = 0
	d.upf.sessions.Add(-1)
	s.stats.n4Sessions.Add(-1)
	c.n4Deletion = d
	s.stats.n4Deleting.Add(1)
	s.changeUPF(d.upf, func() { d.upf.deletions.track(d) })
	s.queueDeletion(d)
}

// deleteWindow bounds the PFCP session deletions in flight towards one
// UPF, as restoreWindow bounds restorations: a release of many UEs at once
// is a burst that would overflow the UPF's socket buffer and wait for
// retransmissions, and each deletion in flight is a goroutine.
const deleteWindow = 64

// deletionQueue is a UPF's PFCP session deletions: at most deleteWindow
// workers send them, the rest wait in order. pending are those queued or
// in flight, which the UPF's record lists.
type deletionQueue struct {
	mu      sync.Mutex
	queue   []*n4Deletion
	workers int
	pending map[*n4Deletion]struct{}
}

func (q *deletionQueue) track(d *n4Deletion) {
	q.mu.Lock()
	if q.pending == nil {
		q.pending = make(map[*n4Deletion]struct{})
	}
	q.pending[d] = struct{}{}
	q.mu.Unlock()
}

func (q *deletionQueue) untrack(d *n4Deletion) {
	q.mu.Lock()
	delete(q.pending, d)
	q.mu.Unlock()
}

// list returns the pending deletions.
func (q *deletionQueue) list() []*n4Deletion {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]*n4Deletion, 0, len(q.pending))
	for d := range q.pending {
		out = append(out, d)
	}
	return out
}

// queueDeletion has d sent once one of its UPF's deleteWindow places is
// free.
func (s *SMF) queueDeletion(d *n4Deletion) {
	q := &d.upf.deletions
	q.mu.Lock()
	q.queue = append(q.queue, d)
	if q.workers >= deleteWindow {
		q.mu.Unlock()
		return
	}
	q.workers++
	q.mu.Unlock()
	if !s.group.Go(func() { s.runDeletions(q) }) {
		// Closing: the UPF drops the SMF's sessions with the association.
		q.mu.Lock()
		q.workers--
		rest := q.queue
		q.queue = nil
		q.mu.Unlock()
		for _, d := range rest {
			s.deletionEnded(d, true)
			s.stats.n4Deleting.Add(-1)
		}
	}
}

// runDeletions is one of a UPF's deletion workers: it sends queued
// deletions until there are none.
func (s *SMF) runDeletions(q *deletionQueue) {
	for {
		q.mu.Lock()
		if len(q.queue) == 0 || s.group.Closed() {
			q.workers--
			q.mu.Unlock()
			return
		}
		d := q.queue[0]
		q.queue[0] = nil
		q.queue = q.queue[1:]
		q.mu.Unlock()
		s.runDeletion(d)
	}
}

// runDeletion sends d and records whether the UPF is known to have
// forgotten the session: it accepted the deletion, answered that it has
// no such session or no association, or its life ended.
func (s *SMF) runDeletion(d *n4Deletion) {
	defer s.stats.n4Deleting.Add(-1)
	u := d.upf
	ctx, cancel, err := n4Context(s.group.Context(), d.life, s.cfg.timers.PFCPTimeout)
	if err != nil {
		s.deletionEnded(d, d.life.ended())
		return
	}
	defer cancel()
	resp, err := u.up.DeleteSession(ctx, d.seid)
	gone := false
	switch {
	case d.life.ended():
		gone = true // the UPF restarted meanwhile: the session went with it
	case err != nil:
		s.stats.n4Failures.Add(1)
		s.log.Warn("PFCP session deletion got no answer; the SMF forgets the session and holds its UE address back",
			"supi", d.supi, "psi", d.psi, "upf", u.name, "seid", d.seid, "err", err)
	case !resp.Cause.Accepted():
		s.stats.n4Failures.Add(1)
		gone = lostAssociation(resp.Cause)
		s.log.Warn("PFCP session deletion rejected; the SMF forgets the session", "supi", d.supi, "psi", d.psi,
			"upf", u.name, "seid", d.seid, "cause", resp.Cause, "address_held_back", !gone)
	default:
		gone = true
		s.countUsage(d.supi, d.psi, resp.UsageReports)
	}
	s.deletionEnded(d, gone)
}

// n4Deletion is a PFCP session deletion queued or in flight, and the UE
// address that waits for its end.
type n4Deletion struct {
	upf  *upfNode
	seid uint64
	life *n4Life
	supi string
	psi  uint8

	mu   sync.Mutex
	done bool
	gone bool // the UPF is known to hold the session no longer
	// ip, of dnn's pool, waits for the end (releaseAddress): it goes back
	// to the pool, or into the UPF's quarantine (settleAddress).
	dnn *dnnConf
	ip  netip.Addr
}

// await has ip wait for d's end, unless d has ended already: then ended
// is true and gone tells how.
func (d *n4Deletion) await(dnn *dnnConf, ip netip.Addr) (ended, gone bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return true, d.gone
	}
	d.dnn, d.ip = dnn, ip
	return false, false
}

// end marks d done and hands over the address waiting for it, if any.
func (d *n4Deletion) end(gone bool) (*dnnConf, netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done, d.gone = true, gone
	dnn, ip := d.dnn, d.ip
	d.dnn, d.ip = nil, netip.Addr{}
	return dnn, ip
}

// outcome tells whether d has ended, and if so whether the session is gone.
func (d *n4Deletion) outcome() (done, gone bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done, d.gone
}

// waiting is the address that waits for d's end (invalid: none).
func (d *n4Deletion) waiting() (*dnnConf, netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dnn, d.ip
}

// deletionEnded records the end of d, gone telling whether the UPF is
// known to hold the session no longer, and settles the address that
// waited for it, in one change of the UPF's record.
func (s *SMF) deletionEnded(d *n4Deletion, gone bool) {
	s.changeUPF(d.upf, func() {
		d.upf.deletions.untrack(d)
		if dnn, ip := d.end(gone); ip.IsValid() {
			s.settleAddress(d, dnn, ip, gone)
		}
	})
}

// settleAddress returns ip, whose session d deleted, to dnn's pool once
// the UPF no longer routes it to the session; when the UPF may still do
// so (the deletion got no answer, or was refused), ip is quarantined at
// that UPF instead, until its life ends (life.go). It runs inside a
// change of the UPF's record, as endLife does, so a life that ends
// meanwhile finds ip in the quarantine or sees it released.
func (s *SMF) settleAddress(d *n4Deletion, dnn *dnnConf, ip netip.Addr, gone bool) {
	if gone || d.life.ended() {
		dnn.pool.release(ip)
		return
	}
	d.upf.quarantine.add(dnn, ip)
}

// releaseAddress returns c's UE address ip to its pool once c's PFCP
// session deletion, if one was sent, has ended (settleAddress). Runs on
// c's executor.
func (s *SMF) releaseAddress(c *smContext, ip netip.Addr) {
	d := c.n4Deletion
	if d == nil {
		c.dnn.pool.release(ip)
		return
	}
	s.changeUPF(d.upf, func() {
		if ended, gone := d.await(c.dnn, ip); ended {
			s.settleAddress(d, c.dnn, ip, gone)
		}
	})
}

func (s *SMF) countUsage(supi string, psi uint8, reports []pfcp.UsageReport) {
	for _, r := range reports {
		s.stats.usageReports.Add(1)
		s.log.Debug("usage report", "supi", supi, "psi", psi, "urr", r.URRID, "seq", r.URSEQN,
			"ul", r.Volume.UL, "dl", r.Volume.DL, "total", r.Volume.Total)
	}
}

// HandleSessionReport implements pfcp.CPHandler (TS 29.244 §7.5.8,
// TS 23.502 §4.2.3.3 step 2). Usage reports are counted and logged. A
// downlink data report is acknowledged at once; the network-triggered
// service request it starts runs on the UE's executor.
func (s *SMF) HandleSessionReport(ctx context.Context, seid uint64, req *pfcp.SessionReportRequest) *pfcp.SessionReportResponse {
	c := s.seids.Get(seid)
	if c == nil || req == nil {
		return &pfcp.SessionReportResponse{Cause: pfcp.CauseSessionContextNotFound}
	}
	if req.ReportType&pfcp.ReportDLDR != 0 {
		s.stats.dlDataReports.Add(1)
		s.post(c.ue, func() { s.onDownlinkData(c) })
	}
	if req.ReportType&pfcp.ReportUSAR != 0 {
		s.countUsage(c.supi, c.psi, req.UsageReports)
	}
	if req.ReportType&pfcp.ReportERIR != 0 && req.ErrorIndicationReport != nil {
		s.stats.errorIndicationReports.Add(1)
		remote := req.ErrorIndicationReport.RemoteFTEIDs
		s.post(c.ue, func() {
			// TS 23.527 §5 (GTP-U Error Indication from a 5G-AN): only the
			// tunnel the gNB disowned; a report about a tunnel the
			// session has since left (a handover, a reactivation) is
			// stale.
			for _, f := range remote {
				if c.dlTunnel.TEID == f.TEID && c.dlTunnel.Addr == f.IPv4 && f.IPv4.IsValid() {
					s.userPlaneFailed(c, "GTP-U Error Indication")
					return
				}
			}
		})
	}
	return &pfcp.SessionReportResponse{Cause: pfcp.CauseRequestAccepted}
}

// HandleNodeReport implements pfcp.CPHandler (TS 29.244 §6.2.9.2). A User
// Plane Path Failure Report (§7.4.5.1-2) names the gNBs that the UPF lost
// its GTP-U path to (Echo supervision, TS 23.007 §20.3.1): every session
// of that UPF whose downlink tunnel ends at one of them loses its user
// plane (TS 23.527 §5, TS 23.007 §20.3.1: the SMF deactivates it, so that downlink data is
// buffered and pages the UE, whose service request sets up a new tunnel).
// A recovery report (§7.4.5.1-3) is logged: the sessions come back with
// service requests, not with the path.
func (s *SMF) HandleNodeReport(ctx context.Context, req *pfcp.NodeReportRequest) *pfcp.NodeReportResponse {
	resp := &pfcp.NodeReportResponse{NodeID: s.nodeID(), Cause: pfcp.CauseRequestAccepted}
	if req == nil {
		resp.Cause = pfcp.CauseMandatoryIEMissing
		return resp
	}
	s.stats.nodeReports.Add(1)
	if req.ReportType&pfcp.NodeReportUPRR != 0 {
		s.log.Info("UPF reports user plane paths recovered", "upf", req.NodeID.String(), "peers", req.PathRecoveryPeers)
	}
	if req.ReportType&pfcp.NodeReportUPFR == 0 || len(req.PathFailurePeers) == 0 {
		return resp
	}
	s.log.Warn("UPF reports user plane path failure", "upf", req.NodeID.String(), "peers", req.PathFailurePeers)
	failed := make(map[netip.Addr]bool, len(req.PathFailurePeers))
	for _, a := range req.PathFailurePeers {
		failed[a.Unmap()] = true
	}
	known := s.reportingUPF(req.NodeID) != nil
	for _, c := range s.contexts.All() {
		if known && !s.isReportingUPF(c.upf, req.NodeID) {
			continue
		}
		s.post(c.ue, func() {
			// The tunnel is read on the UE's executor, where it changes.
			if failed[c.dlTunnel.Addr] {
				s.userPlaneFailed(c, "user plane path failure")
			}
		})
	}
	return resp
}

// reportingUPF is the configured UPF a Node ID names: the Node ID it gave
// at association, else its N3 address (tern's UPF takes it as Node ID by
// default) or its name. nil: none does;
// the report then applies to the sessions of every UPF, since the SMF
// cannot tell which paths were meant and a needless deactivation costs
// only a service request.
func (s *SMF) reportingUPF(id pfcp.NodeID) *upfNode {
	for _, u := range s.cfg.upfs {
		if s.isReportingUPF(u, id) {
			return u
		}
	}
	return nil
}

func (s *SMF) isReportingUPF(u *upfNode, id pfcp.NodeID) bool {
	if u == nil {
		return false
	}
	if assoc := u.nodeID.Load(); assoc != nil && assoc.String() == id.String() {
		return true
	}
	return id.IP.IsValid() && id.IP.Unmap() == u.n3 || id.FQDN != "" && id.FQDN == u.name
}

// userPlaneFailed deactivates c's user plane because its N3 tunnel no
// longer works (TS 23.527 §5, Error Indication steps 4-5): the UPF buffers downlink
// data and reports it (the AN release path, deactivateUP, so that data
// pages the UE and a service request sets up a new tunnel), and, since
// the SMF saw the user plane active, the AMF is asked to release the
// session's resources in the 5G-AN (TS 23.502 §4.3.7 CN-initiated
// deactivation: N1N2MessageTransfer with a PDU Session Resource Release
// Command). Runs on c's executor.
func (s *SMF) userPlaneFailed(c *smContext, why string) {
	if c.state == stReleased || c.state == stReleasing || c.state == stEstablishing ||
		c.upCnx == models.Smf_PDUSess_UpCnxState_DEACTIVATED {
		return
	}
	active := c.upCnx == models.Smf_PDUSess_UpCnxState_ACTIVATED
	s.log.Info("user plane deactivated", "supi", c.supi, "psi", c.psi, "tunnel", c.dlTunnel.Addr, "teid", c.dlTunnel.TEID, "why", why)
	if _, err := s.deactivateUP(c); err != nil {
		s.log.Warn("user plane deactivation: UPF not told to buffer", "supi", c.supi, "psi", c.psi, "err", err)
	}
	s.stats.upFailureDeactivations.Add(1)
	if !active {
		return
	}
	n2, err := releaseCommandTransfer()
	if err != nil {
		s.log.Warn("user plane deactivation: no N2 content for the AMF", "supi", c.supi, "psi", c.psi, "err", err)
		return
	}
	s.send(c, n1n2{n2: n2, n2Type: models.Amf_Comm_NgapIeType_PDU_RES_REL_CMD}, nil)
}

// dropDownlink makes the UPF discard the session's buffered downlink and
// drop what follows (paging failed, TS 23.502 §4.2.3.3 step 4b).
func (s *SMF) dropDownlink(c *smContext) error {
	act := pfcp.ActionDrop
	return s.modifyN4(c, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: farDownlink, ApplyAction: &act}},
	})
}
