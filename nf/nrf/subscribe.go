package nrf

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

// subscription is one NF status subscription (TS 29.510 §5.2.2.5). Its
// fields are fixed at creation; only the worker reads the queue.
type subscription struct {
	id      string
	uri     string // nfStatusNotificationUri
	expires time.Time
	events  []models.Nrf_NFMgmt_NotificationEventType

	// The supported SubscrCond conditions (TS 29.510 §6.1.6.2, SubscrCond):
	// nfInstanceIdCond, nfTypeCond, serviceNameCond. Set ones must all hold.
	condID      string
	condType    string
	condService models.Nrf_NFMgmt_ServiceName

	queue   chan *models.Nrf_NFMgmt_NotificationData
	cancel  context.CancelFunc
	dropped int // notifications lost to a full queue; guarded by NRF.mu
}

// allEvents are the events of a subscription that names none (TS 29.510
// §6.1.6.2, SubscriptionData: reqNotifEvents absent means every event).
var allEvents = []models.Nrf_NFMgmt_NotificationEventType{
	models.Nrf_NFMgmt_NotificationEventType_REGISTERED,
	models.Nrf_NFMgmt_NotificationEventType_DEREGISTERED,
	models.Nrf_NFMgmt_NotificationEventType_PROFILE_CHANGED,
}

// supportedCond are the JSON keys of SubscrCond that tern evaluates.
var supportedCond = map[string]bool{"nfInstanceId": true, "nfType": true, "serviceName": true}

// wants reports whether the subscription asked for ev on e.
func (s *subscription) wants(ev models.Nrf_NFMgmt_NotificationEventType, e *entry) bool {
	if !slices.Contains(s.events, ev) {
		return false
	}
	p := &e.mgmt
	if s.condID != "" && p.NfInstanceId != s.condID {
		return false
	}
	if s.condType != "" && string(p.NfType) != s.condType {
		return false
	}
	if s.condService != "" && !offersAny(p, []models.Nrf_NFMgmt_ServiceName{s.condService}) {
		return false
	}
	return true
}

// Subscribe implements sbi.NFManagement (NFStatusSubscribe, TS 29.510
// §5.2.2.5). The NRF grants validityTime = the requested one, at most
// Config.SubscriptionValidity from now (§5.2.2.5.2 lets it shorten it).
func (n *NRF) Subscribe(ctx context.Context, sub *models.Nrf_NFMgmt_SubscriptionData) (*models.Nrf_NFMgmt_SubscriptionData, error) {
	if sub == nil || sub.NfStatusNotificationUri == "" {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfStatusNotificationUri")
	}
	s := &subscription{uri: sub.NfStatusNotificationUri, events: allEvents, queue: make(chan *models.Nrf_NFMgmt_NotificationData, notifyQueue)}
	if len(sub.ReqNotifEvents) > 0 {
		for _, ev := range sub.ReqNotifEvents {
			if !slices.Contains(allEvents, ev) {
				return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseOptionalIEIncorrect, "reqNotifEvents: %q", ev)
			}
		}
		s.events = slices.Clone(sub.ReqNotifEvents)
	}
	if c := sub.SubscrCond; c != nil {
		// SubscrCond is a oneOf in TS 29.510 that the model flattens: find
		// the conditions set through the JSON form, so that any condition
		// tern does not evaluate is refused rather than silently ignored
		// (which would flood the subscriber).
		raw, err := json.Marshal(c)
		var set map[string]any
		if err == nil {
			err = json.Unmarshal(raw, &set)
		}
		if err != nil {
			return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseOptionalIEIncorrect, "subscrCond: %v", err)
		}
		for k := range set {
			if !supportedCond[k] {
				return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseOptionalIEIncorrect,
					"subscrCond: %s is not supported (tern evaluates nfInstanceId, nfType and serviceName)", k)
			}
		}
		s.condID, s.condType, s.condService = c.NfInstanceId, c.NfType, c.ServiceName
	}
	now := n.now()
	s.expires = now.Add(n.cfg.SubscriptionValidity)
	if v := sub.ValidityTime; v != nil {
		if !v.After(now) {
			return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseOptionalIEIncorrect, "validityTime %v is not in the future", v.UTC())
		}
		if v.Before(s.expires) {
			s.expires = *v
		}
	}
	// TS 29.510 SubscriptionId: no "-" outside the optional PLMN prefix.
	s.id = strings.ReplaceAll(identity.NewNFInstanceID(), "-", "")
	out := *sub
	out.SubscriptionId = s.id
	vt := s.expires.UTC()
	out.ValidityTime = &vt

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "the NRF is stopping")
	}
	var wctx context.Context
	wctx, s.cancel = context.WithCancel(n.ctx)
	n.subs[s.id] = s
	n.wg.Add(1)
	go n.deliver(wctx, s)
	n.log.Info("NF status subscription", "subscriptionId", s.id, "uri", s.uri, "nfInstanceIdCond", s.condID,
		"nfTypeCond", s.condType, "serviceNameCond", s.condService, "validityTime", vt)
	return &out, nil
}

// Unsubscribe implements sbi.NFManagement (NFStatusUnSubscribe, TS 29.510
// §5.2.2.7). An expired subscription is already gone.
func (n *NRF) Unsubscribe(ctx context.Context, subscriptionID string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.subs[subscriptionID]
	if !ok || !n.now().Before(s.expires) {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseSubscriptionNotFound, "%q", subscriptionID)
	}
	n.dropSubscription(subscriptionID)
	n.log.Info("NF status subscription removed", "subscriptionId", subscriptionID)
	return nil
}

// dropSubscription ends a subscription and its worker; notifications not
// yet delivered are lost. Caller holds n.mu.
func (n *NRF) dropSubscription(id string) {
	if s, ok := n.subs[id]; ok {
		s.cancel()
		delete(n.subs, id)
	}
}

// fanout queues the notification of ev on e for every subscription that
// wants it, without blocking (TS 29.510 §5.2.2.6). Caller holds n.mu,
// which orders the notifications of one subscription as the registry
// changes.
func (n *NRF) fanout(ev models.Nrf_NFMgmt_NotificationEventType, e *entry, now time.Time) {
	var nd *models.Nrf_NFMgmt_NotificationData
	for _, s := range n.subs {
		if !now.Before(s.expires) || !s.wants(ev, e) {
			continue
		}
		if nd == nil {
			nd = &models.Nrf_NFMgmt_NotificationData{Event: ev, NfInstanceUri: n.instanceURI(e.mgmt.NfInstanceId)}
			// TS 29.510 §6.1.6.2, NotificationData: the whole profile for NF_REGISTERED,
			// and for NF_PROFILE_CHANGED to subscribers that do not ask for
			// partial changes (tern sends no profileChanges);
			// NF_DEREGISTERED carries only the URI.
			if ev != models.Nrf_NFMgmt_NotificationEventType_DEREGISTERED {
				p := e.mgmt
				nd.NfProfile = &p
			}
		}
		select {
		case s.queue <- nd:
		default:
			s.dropped++
			n.log.Warn("NF status notification dropped: the subscriber is not keeping up", "subscriptionId", s.id,
				"uri", s.uri, "event", ev, "nfInstanceId", e.mgmt.NfInstanceId, "dropped", s.dropped)
		}
	}
}

// deliver is the worker of one subscription: it sends the queued
// notifications in order, each within Config.NotifyTimeout, until the
// subscription ends or the NRF stops.
func (n *NRF) deliver(ctx context.Context, s *subscription) {
	defer n.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case nd := <-s.queue:
			if ctx.Err() != nil { // select picks at random among ready cases
				return
			}
			r := n.notifier.Load()
			if r == nil {
				n.log.Debug("no notifier set: NF status notification not sent", "subscriptionId", s.id, "event", nd.Event)
				continue
			}
			dctx, cancel := context.WithTimeout(ctx, n.cfg.NotifyTimeout)
			err := r.n.NFStatusNotify(dctx, s.uri, nd)
			cancel()
			if err != nil {
				n.log.Warn("NF status notification failed", "subscriptionId", s.id, "uri", s.uri, "event", nd.Event,
					"nfInstanceUri", nd.NfInstanceUri, "err", err)
			}
		}
	}
}
