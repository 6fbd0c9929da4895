package nrfclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

// DefaultMaxEntries bounds a Discoverer's cache.
const DefaultMaxEntries = 1024

// DiscovererConfig configures a Discoverer.
type DiscovererConfig struct {
	// NRF is Nnrf_NFDiscovery through any binding. Required.
	NRF    sbi.NFDiscovery
	Logger *slog.Logger
	// MaxEntries bounds the number of cached queries (default 1024): a
	// query with a SUPI is one entry per subscriber.
	MaxEntries int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Discoverer is an sbi.NFDiscovery that caches the NRF's answers, per
// target and query, for their validityPeriod (TS 29.510 §6.2.6.2,
// SearchResult; §5.3.2.2: the consumer may cache the result that long). When the NRF cannot be reached, or answers 5xx, it answers
// from the last result of the same query however old, so an NF keeps
// calling the peers it knew; it logs the outage once. Results are shared
// with the cache: treat the profiles as read-only.
//
// It is also an sbi.NFStatusNotifier: subscribe it to the NRF (Subscribe
// with its notification URI) and NF_DEREGISTERED removes the instance from
// the cache, NF_PROFILE_CHANGED and NF_REGISTERED make the results
// concerned stale, to be asked again.
type Discoverer struct {
	nrf  sbi.NFDiscovery
	log  *slog.Logger
	now  func() time.Time
	max  int
	down atomic.Bool // the last NRF request failed; logged once

	mu    sync.Mutex
	cache map[string]*cached // entries are replaced, never modified
}

type cached struct {
	target  sbi.NFType
	res     *models.Nrf_NFDisc_SearchResult
	fetched time.Time
	expires time.Time // fresh before; stale (a fallback) after
}

var (
	_ sbi.NFDiscovery      = (*Discoverer)(nil)
	_ sbi.NFStatusNotifier = (*Discoverer)(nil)
)

// NewDiscoverer returns a Discoverer with an empty cache.
func NewDiscoverer(cfg DiscovererConfig) (*Discoverer, error) {
	if cfg.NRF == nil {
		return nil, errors.New("nrfclient: discoverer: no NRF")
	}
	if cfg.MaxEntries < 0 {
		return nil, fmt.Errorf("nrfclient: discoverer: maxEntries %d is negative", cfg.MaxEntries)
	}
	d := &Discoverer{nrf: cfg.NRF, log: cfg.Logger, now: cfg.Now, max: cfg.MaxEntries, cache: map[string]*cached{}}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.max == 0 {
		d.max = DefaultMaxEntries
	}
	return d, nil
}

// Discover implements sbi.NFDiscovery.
func (d *Discoverer) Discover(ctx context.Context, target sbi.NFType, q sbi.DiscoveryQuery) (*models.Nrf_NFDisc_SearchResult, error) {
	key := cacheKey(target, q)
	d.mu.Lock()
	c := d.cache[key]
	d.mu.Unlock()
	now := d.now()
	if c != nil && now.Before(c.expires) {
		return c.result(), nil
	}
	res, err := d.nrf.Discover(ctx, target, q)
	if err == nil && res != nil {
		if d.down.CompareAndSwap(true, false) {
			d.log.Info("NRF reachable again: discovery results are fresh")
		}
		c = &cached{target: target, res: res, fetched: now,
			expires: now.Add(time.Duration(res.ValidityPeriod) * time.Second)}
		d.store(key, c)
		return c.result(), nil
	}
	if err == nil {
		err = errors.New("no search result")
	}
	if !unreachable(err) {
		return nil, err // the NRF answered: the query is wrong
	}
	if c == nil {
		return nil, fmt.Errorf("nrfclient: discover %s: NRF unreachable and nothing cached: %w", target, err)
	}
	if d.down.CompareAndSwap(false, true) {
		d.log.Warn("NRF unreachable: answering discoveries from cached, possibly stale, profiles", "err", err)
	}
	return c.result(), nil
}

// result returns the cached result with its own instance slice, so that
// a caller reordering it (load balancing) does not reorder the cache.
func (c *cached) result() *models.Nrf_NFDisc_SearchResult {
	r := *c.res
	r.NfInstances = slices.Clone(r.NfInstances)
	return &r
}

// unreachable reports whether err means the NRF did not answer: a
// transport error, a timeout, a 5xx. Then the cache answers.
func unreachable(err error) bool {
	var p *sbi.ProblemDetails
	if errors.As(err, &p) {
		return p.Status >= http.StatusInternalServerError || p.Cause == sbi.CauseTargetNFNotReachable || p.Cause == sbi.CauseTimedOutRequest
	}
	return true
}

// store caches c under key; at max entries it evicts the one fetched the
// longest ago (an expired entry is still the fallback of its query, so age
// is the measure, not expiry).
func (d *Discoverer) store(key string, c *cached) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.cache[key]; !ok && len(d.cache) >= d.max {
		var oldest string
		for k, e := range d.cache {
			if oldest == "" || e.fetched.Before(d.cache[oldest].fetched) {
				oldest = k
			}
		}
		delete(d.cache, oldest)
	}
	d.cache[key] = c
}

// Invalidate removes an NF instance from every cached result, e.g. after a
// call to it failed or it deregistered; a result left empty is dropped.
func (d *Discoverer) Invalidate(nfInstanceID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, c := range d.cache {
		i := slices.IndexFunc(c.res.NfInstances, func(p models.Nrf_NFDisc_NFProfile) bool { return p.NfInstanceId == nfInstanceID })
		if i < 0 {
			continue
		}
		r := *c.res
		r.NfInstances = slices.Delete(slices.Clone(r.NfInstances), i, i+1)
		r.NumNfInstComplete = int32(len(r.NfInstances))
		if len(r.NfInstances) == 0 {
			delete(d.cache, k)
			continue
		}
		nc := *c
		nc.res = &r
		d.cache[k] = &nc
	}
}

// staleWhere makes the results for which f holds stale: the next Discover
// asks the NRF, and they remain the fallback if it cannot be reached.
func (d *Discoverer) staleWhere(f func(*cached) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, c := range d.cache {
		if f(c) {
			nc := *c
			nc.expires = time.Time{}
			d.cache[k] = &nc
		}
	}
}

// NFStatusNotify implements sbi.NFStatusNotifier (TS 29.510 §5.2.2.6) for
// the subscriptions whose nfStatusNotificationUri routes to d.
func (d *Discoverer) NFStatusNotify(ctx context.Context, uri string, n *models.Nrf_NFMgmt_NotificationData) error {
	if n == nil {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "notification data")
	}
	id := InstanceIDOf(n)
	if id == "" {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfInstanceUri")
	}
	switch n.Event {
	case models.Nrf_NFMgmt_NotificationEventType_DEREGISTERED:
		d.Invalidate(id)
	case models.Nrf_NFMgmt_NotificationEventType_PROFILE_CHANGED:
		if n.NfProfile != nil && n.NfProfile.NfStatus != models.Nrf_NFMgmt_NFStatus_REGISTERED {
			d.Invalidate(id) // suspended: not to be called
			break
		}
		d.staleWhere(func(c *cached) bool {
			return slices.ContainsFunc(c.res.NfInstances, func(p models.Nrf_NFDisc_NFProfile) bool { return p.NfInstanceId == id })
		})
	case models.Nrf_NFMgmt_NotificationEventType_REGISTERED:
		// A new instance may answer any cached query of its type.
		d.staleWhere(func(c *cached) bool { return n.NfProfile == nil || c.target == n.NfProfile.NfType })
	default:
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "event %q", n.Event)
	}
	return nil
}

// InstanceIDOf is the NF instance a notification is about: its profile's
// nfInstanceId, else the last segment of its nfInstanceUri
// (.../nf-instances/{nfInstanceID}).
func InstanceIDOf(n *models.Nrf_NFMgmt_NotificationData) string {
	if n == nil {
		return ""
	}
	if n.NfProfile != nil && n.NfProfile.NfInstanceId != "" {
		return n.NfProfile.NfInstanceId
	}
	u := strings.TrimRight(n.NfInstanceUri, "/")
	return u[strings.LastIndexByte(u, '/')+1:]
}

// cacheKey is the canonical form of a query: the order of service names
// and S-NSSAIs does not matter, nor the case of the DNN.
func cacheKey(target sbi.NFType, q sbi.DiscoveryQuery) string {
	services := make([]string, len(q.ServiceNames))
	for i, s := range q.ServiceNames {
		services[i] = string(s)
	}
	slices.Sort(services)
	snssais := make([]string, len(q.SNSSAIs))
	for i, s := range q.SNSSAIs {
		snssais[i] = s.String()
	}
	slices.Sort(snssais)
	var b strings.Builder
	// Fields are separated by a byte no field contains.
	for _, f := range []string{string(target), string(q.RequesterNFType), strings.Join(services, ","), strings.Join(snssais, ","),
		plmnKey(q.PLMN), strings.ToLower(q.DNN), q.SUPI, taiKey(q.TAI), q.TargetNFInstanceID} {
		b.WriteString(f)
		b.WriteByte(0)
	}
	return b.String()
}

func plmnKey(p *identity.PLMN) string {
	if p == nil {
		return ""
	}
	return p.String()
}

func taiKey(t *identity.TAI) string {
	if t == nil {
		return ""
	}
	return t.String()
}
