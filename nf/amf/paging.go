package amf

import (
	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// Network-triggered service request (TS 23.502 §4.2.3.3): an SMF has
// something for a UE in CM-IDLE (downlink data the UPF buffers, or a 5GSM
// message), the AMF pages the UE in its registration area (TS 38.413
// §8.5.1) and delivers once the UE answers with a Service Request. T3513
// bounds the wait (TS 24.501 §5.6.2.2.1, §10.2); when it runs out the SMF
// is told the UE did not respond, and the UPF drops what it buffered.

// mtTransfer is an N1N2MessageTransfer waiting for the UE to come back.
type mtTransfer struct {
	d          smDelivery
	failureURI string // n1n2FailureTxfNotifURI of the request; "" = none
}

// pagingProc is the data of the paging procedure and of what waits for it.
type pagingProc struct {
	// pending are the transfers to deliver once the UE is CM-CONNECTED
	// (they outlive the paging itself, which ends when the Service Request
	// arrives).
	pending []mtTransfer
	// priority is the Paging Priority (TS 38.413 §9.3.1.78, 1..8; 0 =
	// none) of the most urgent transfer waiting.
	priority uint8
}

// pagingPriority maps an ARP priority level (TS 23.501 §5.7.2.2: 1 is the
// highest) to the NGAP Paging Priority: TS 23.502 §4.2.3.3 step 4 has the
// AMF derive it from the ARP the SMF gave; levels 1-8 map one to one
// (PrioLevel1 highest), lower priorities are paged without one.
func pagingPriority(arp *models.Arp) uint8 {
	if arp == nil || arp.PriorityLevel < 1 || arp.PriorityLevel > 8 {
		return 0
	}
	return uint8(arp.PriorityLevel)
}

// onMobileTerminated handles an N1N2MessageTransfer for the UE on its
// executor: delivered at once in CM-CONNECTED, otherwise kept and the UE
// paged (TS 23.502 §4.2.3.3 step 3).
func (u *ue) onMobileTerminated(t mtTransfer, prio uint8) {
	if u.gone() || u.st.rm != rmRegistered {
		u.log.Info("mobile-terminated transfer for a UE no longer registered dropped", "pdu_session_id", t.d.id)
		u.notifyTransferFailed(t, models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING)
		return
	}
	holds := u.st.proc == procServiceRequest || u.st.proc == procHandoverPreparation || u.st.proc == procHandoverExecution
	switch {
	case u.st.cm == cmConnected && !holds:
		u.deliverSM(t.d)
		return
	case u.st.cm == cmIdle && !u.reachable:
		// TS 24.501 §5.3.7: the mobile reachable timer ran out; the UE is
		// not paged.
		u.notifyTransferFailed(t, models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING)
		return
	}
	// CM-IDLE, or a service request in progress (its accept delivers
	// what waits), or a handover (delivered when it ends: TS 23.502
	// §4.9.1.3.2 has the AMF reject with "temporarily rejected, handover
	// ongoing" and the SMF retry; tern keeps the transfer instead, so that
	// the SMF needs no retry loop).
	u.page.pending = append(u.page.pending, t)
	u.amf.stats.pendingTransfers.Add(1)
	if prio != 0 && (u.page.priority == 0 || prio < u.page.priority) {
		u.page.priority = prio
	}
	if u.st.cm == cmIdle && u.st.proc == procNone {
		u.startPaging()
	}
}

// startPaging sends Paging to every gNB serving a TA of the UE's
// registration area (TS 23.502 §4.2.3.3 step 4, TS 38.413 §8.5.1) and
// starts T3513.
func (u *ue) startPaging() {
	if !u.fire(evPagingStart) {
		return
	}
	u.amf.stats.pagings.Add(1)
	u.sendPaging()
	u.startRetransmission(timerT3513, u.sendPaging)
}

// sendPaging sends one round of Paging messages.
func (u *ue) sendPaging() {
	if u.guti == nil {
		return
	}
	a := u.amf
	a.mu.Lock()
	gnbs := make([]*gnb, 0, len(a.gnbs))
	for g := range a.gnbs {
		gnbs = append(gnbs, g)
	}
	a.mu.Unlock()
	sent := 0
	for _, g := range gnbs {
		var tais []identity.TAI
		for _, t := range u.taiList {
			if g.servesTAI(t) {
				tais = append(tais, t)
			}
		}
		if len(tais) == 0 {
			continue
		}
		m := &ngap.Paging{
			UEPagingIdentity: u.guti.STMSI(),
			TAIListForPaging: tais,
			PagingPriority:   u.page.priority,
		}
		if err := u.sendN2(g, 0, m); err != nil {
			g.log.Warn("Paging not sent", "err", err)
			continue
		}
		sent++
	}
	if sent == 0 {
		u.log.Info("no gNB serves the UE's registration area; paging goes unheard", "tais", len(u.taiList))
	}
}

// pagingFailed ends paging after T3513's last expiry (TS 23.502 §4.2.3.3
// step 4b / TS 29.518 §5.2.2.3.2): every waiting transfer fails with
// UE_NOT_RESPONDING and the UE stays CM-IDLE.
func (u *ue) pagingFailed() {
	u.amf.stats.pagingFailures.Add(1)
	u.fire(evPagingEnd)
	u.failPending(models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING)
}

// failPending tells the senders of every waiting transfer that it failed.
func (u *ue) failPending(cause models.Amf_Comm_N1N2MessageTransferCause) {
	pending := u.page.pending
	u.page = pagingProc{}
	u.amf.stats.pendingTransfers.Add(-int64(len(pending)))
	for _, t := range pending {
		u.notifyTransferFailed(t, cause)
	}
}

// notifyTransferFailed calls the transfer's failure notification URI.
func (u *ue) notifyTransferFailed(t mtTransfer, cause models.Amf_Comm_N1N2MessageTransferCause) {
	if t.failureURI == "" {
		return
	}
	n, ok := u.amf.smfService().(sbi.N1N2TransferFailureNotifier)
	if !ok {
		return
	}
	ctx, cancel := u.amf.callCtx()
	defer cancel()
	if err := n.N1N2TransferFailureNotify(ctx, t.failureURI, &models.Amf_Comm_N1N2MsgTxfrFailureNotification{
		Cause: cause, N1n2MsgDataUri: t.failureURI,
	}); err != nil {
		u.log.Info("N1N2 transfer failure notification not taken", "uri", t.failureURI, "err", err)
	}
}

// pagedSessions takes the waiting transfers that set up a session's user
// plane (the downlink data that caused the paging): the service request
// activates those sessions. The SMF gives fresh N2 content for them then.
func (u *ue) pagedSessions() []uint8 {
	var ids []uint8
	rest := u.page.pending[:0]
	for _, t := range u.page.pending {
		if t.d.kind == n2Setup && len(t.d.n1) == 0 {
			u.amf.stats.pendingTransfers.Add(-1)
			if u.sessions[t.d.id] != nil && !containsID(ids, t.d.id) {
				ids = append(ids, t.d.id)
			}
			continue
		}
		rest = append(rest, t)
	}
	u.page.pending = rest
	return ids
}

// takePendingN1 takes the remaining waiting transfers, delivered once the
// Service Accept is out.
func (u *ue) takePendingN1() []smDelivery {
	out := make([]smDelivery, 0, len(u.page.pending))
	for _, t := range u.page.pending {
		out = append(out, t.d)
	}
	u.amf.stats.pendingTransfers.Add(-int64(len(out)))
	u.page = pagingProc{}
	return out
}

func containsID(ids []uint8, id uint8) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// deliverPending delivers what waited while a handover ran.
func (u *ue) deliverPending() {
	for _, d := range u.takePendingN1() {
		u.deliverSM(d)
	}
}
