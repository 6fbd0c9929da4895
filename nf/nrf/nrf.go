// Package nrf is tern's NF repository function (TS 29.510):
// Nnrf_NFManagement (register, update by JSON Patch and its heart-beat
// form, deregister, profile retrieval, status subscriptions and their
// notifications), Nnrf_NFDiscovery and
// Nnrf_AccessToken, behind the sbi interfaces so that any binding (the
// in-process Go call, HTTP/2) serves them.
//
// # Registry snapshots
//
// Discovery is the hot path: every NF discovers its peers, registrations
// are rare. So readers never lock: every change publishes a new immutable
// snapshot of the registry through an atomic pointer, and Discover,
// GetProfile and AccessToken read whichever snapshot is current. Writers
// (register, update, deregister, a status change by expiry) serialise
// on a mutex, which also guards the subscriptions, and copy the map: O(n)
// per change, nothing for the tens of instances a core has. A published entry is
// never modified; a status change publishes a new entry. The time of each
// instance's last heartbeat is kept beside the snapshot, under the mutex,
// because it changes every heartBeatTimer for every instance and only
// writers read it: a heartbeat of a healthy instance publishes nothing.
//
// # Validity: heartbeats, suspension, removal
//
// The NRF answers NFRegister with the heartBeatTimer it wants
// (Config.HeartBeatTimer; TS 29.510 §5.2.2.2.2 lets the NRF override what
// the NF proposes). An instance that has not sent a heartbeat (an NFUpdate,
// TS 29.510 §5.2.2.3.2: the heart-beat or any other patch) nor registered
// again for heartBeatTimer × heartBeatGrace is SUSPENDED:
// it stays registered but is no longer discoverable, and subscribers get
// NF_PROFILE_CHANGED with the new nfStatus, which is what §5.2.2.3.2 asks
// of an NRF that misses heartbeats (tern does not send NF_DEREGISTERED
// here, because the instance may come back: its next heartbeat reinstates
// it, answered 200 OK with the profile, and subscribers get
// NF_PROFILE_CHANGED again). After Config.RemoveAfter without a heartbeat
// the instance is removed, as if it had deregistered (NF_DEREGISTERED; the
// spec leaves this to the implementation); its next heartbeat gets 404 and
// the NF registers again. The clock is injected (WithClock) and the
// sweeper that applies these rules runs from Start to Stop.
//
// # Subscriptions and notifications
//
// NFStatusSubscribe (TS 29.510 §5.2.2.5) gives each subscription an ID, a
// validityTime after which it is dropped, a bounded queue and a worker
// goroutine. A registry change enqueues its notification for every
// subscription whose condition and events it satisfies without waiting
// (a full queue drops the notification and logs it), and the worker POSTs
// them in order through the NFStatusNotifier (SetNotifier), each with
// Config.NotifyTimeout: a slow or dead subscriber delays only itself,
// never a registration.
//
// # Access tokens
//
// With Config.AccessTokens the NRF is the OAuth 2.0 authorization server
// of TS 33.501 §13.4.1: Nnrf_AccessToken (TS 29.510 §5.4) grants client
// credentials to registered NF instances for services that some registered
// producer offers to them, as an ES256-signed JWT (sbi.AccessTokenClaims)
// that producers verify offline with the NRF's public key (PublicKey;
// nrfclient.TokenVerifier). A token says who may call whom for what until
// when: iss is the NRF's instance ID, sub the consumer's, aud the
// producer's NF type (any instance of it) or instance ID (that one only),
// scope the service names, exp the end of Config.TokenLifetime. The NRF
// is the only party that checks registrations and allowedNfTypes; a
// producer only checks the signature and those claims, so revoking a
// consumer takes effect when its tokens expire. The key is loaded from
// Config.SigningKey or generated at start, in which case tokens do not
// survive a restart.
package nrf

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

// Config configures the NRF. Zero values take the defaults named.
type Config struct {
	// ValidityPeriod is how long consumers may cache a discovery result
	// (TS 29.510 SearchResult.validityPeriod). Default 1h.
	ValidityPeriod time.Duration `yaml:"validityPeriod,omitempty"`
	// InstanceID is the NRF's own NF instance ID (a UUID), the issuer of
	// its access tokens. Default: a random UUID at every start.
	InstanceID string `yaml:"instanceId,omitempty"`
	// APIRoot is the NRF's apiRoot (TS 29.501 §4.4.1), e.g.
	// "http://10.0.0.1:8000": notifications name an NF instance by the URI
	// of its resource under it (nfInstanceUri). Default: none, so the URI
	// is the path /nnrf-nfm/v1/nf-instances/{id}.
	APIRoot string `yaml:"apiRoot,omitempty"`
	// HeartBeatTimer is the heartbeat interval the NRF asks of every NF
	// (NFProfile.heartBeatTimer, whole seconds). Default 10s.
	HeartBeatTimer time.Duration `yaml:"heartBeatTimer,omitempty"`
	// HeartBeatGrace multiplies HeartBeatTimer: an instance whose last
	// heartbeat is older than that is SUSPENDED. At least 1; default 1.5.
	HeartBeatGrace float64 `yaml:"heartBeatGrace,omitempty"`
	// RemoveAfter is how long after its last heartbeat a silent instance is
	// removed (deregistered). More than HeartBeatTimer × HeartBeatGrace;
	// default 6 × HeartBeatTimer.
	RemoveAfter time.Duration `yaml:"removeAfter,omitempty"`
	// SubscriptionValidity is the longest validityTime the NRF grants an
	// NF status subscription; subscribers subscribe again before it ends.
	// Default 24h.
	SubscriptionValidity time.Duration `yaml:"subscriptionValidity,omitempty"`
	// NotifyTimeout bounds each NF status notification. Default 2s.
	NotifyTimeout time.Duration `yaml:"notifyTimeout,omitempty"`
	// AccessTokens makes the NRF issue OAuth 2.0 access tokens
	// (Nnrf_AccessToken, TS 33.501 §13.4.1). Default off: token requests
	// are refused (unauthorized_client).
	AccessTokens bool `yaml:"accessTokens,omitempty"`
	// TokenLifetime is how long an access token is valid. Default 1h.
	TokenLifetime time.Duration `yaml:"tokenLifetime,omitempty"`
	// SigningKey is a PEM file holding the P-256 private key (PKCS #8 or
	// SEC 1) that signs access tokens. Default: a key generated at start.
	SigningKey string `yaml:"signingKey,omitempty"`
}

// Defaults of Config's zero values.
const (
	DefaultValidityPeriod       = time.Hour
	DefaultHeartBeatTimer       = 10 * time.Second
	DefaultHeartBeatGrace       = 1.5
	DefaultRemoveAfterBeats     = 6 // RemoveAfter = 6 × HeartBeatTimer
	DefaultSubscriptionValidity = 24 * time.Hour
	DefaultNotifyTimeout        = 2 * time.Second
	DefaultTokenLifetime        = time.Hour
)

// notifyQueue is how many notifications wait for one subscriber before
// more are dropped.
const notifyQueue = 64

// withDefaults returns c with its zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.ValidityPeriod == 0 {
		c.ValidityPeriod = DefaultValidityPeriod
	}
	if c.HeartBeatTimer == 0 {
		c.HeartBeatTimer = DefaultHeartBeatTimer
	}
	if c.HeartBeatGrace == 0 {
		c.HeartBeatGrace = DefaultHeartBeatGrace
	}
	if c.RemoveAfter == 0 {
		c.RemoveAfter = DefaultRemoveAfterBeats * c.HeartBeatTimer
	}
	if c.SubscriptionValidity == 0 {
		c.SubscriptionValidity = DefaultSubscriptionValidity
	}
	if c.NotifyTimeout == 0 {
		c.NotifyTimeout = DefaultNotifyTimeout
	}
	if c.TokenLifetime == 0 {
		c.TokenLifetime = DefaultTokenLifetime
	}
	return c
}

// Validate checks the configuration and names the bad field by its path
// in tern's configuration file, as nrf.heartBeatTimer: tern config reports
// the error as it is.
func (c *Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"validityPeriod", c.ValidityPeriod}, {"heartBeatTimer", c.HeartBeatTimer}, {"removeAfter", c.RemoveAfter},
		{"subscriptionValidity", c.SubscriptionValidity}, {"notifyTimeout", c.NotifyTimeout}, {"tokenLifetime", c.TokenLifetime},
	} {
		if d.v < 0 {
			return fmt.Errorf("nrf.%s: %v is negative", d.name, d.v)
		}
		// validityPeriod, heartBeatTimer and the token's expires_in go on
		// the wire as int32 seconds.
		if d.v/time.Second > math.MaxInt32 {
			return fmt.Errorf("nrf.%s: %v is too long", d.name, d.v)
		}
	}
	// NFs learn the interval as a whole number of seconds.
	if c.HeartBeatTimer != 0 && (c.HeartBeatTimer < time.Second || c.HeartBeatTimer%time.Second != 0) {
		return fmt.Errorf("nrf.heartBeatTimer: %v is not a whole number of seconds", c.HeartBeatTimer)
	}
	if c.HeartBeatTimer > 24*time.Hour {
		return fmt.Errorf("nrf.heartBeatTimer: %v is more than a day", c.HeartBeatTimer)
	}
	if c.HeartBeatGrace != 0 && !(c.HeartBeatGrace >= 1 && c.HeartBeatGrace <= 100) { // also rejects NaN
		return fmt.Errorf("nrf.heartBeatGrace: %v is not between 1 and 100", c.HeartBeatGrace)
	}
	d := c.withDefaults()
	if suspend := d.suspendAfter(); d.RemoveAfter <= suspend {
		return fmt.Errorf("nrf.removeAfter: %v is not longer than heartBeatTimer × heartBeatGrace (%v)", d.RemoveAfter, suspend)
	}
	if strings.HasSuffix(c.APIRoot, "/") {
		return fmt.Errorf("nrf.apiRoot: %q ends with /", c.APIRoot)
	}
	return nil
}

// suspendAfter is how long without a heartbeat suspends an instance.
func (c Config) suspendAfter() time.Duration {
	return time.Duration(float64(c.HeartBeatTimer) * c.HeartBeatGrace)
}

// Option configures what a YAML file cannot: the clock, a key object.
type Option func(*NRF)

// WithClock makes the NRF read the time from now (tests drive expiry with
// it; the sweeper still ticks in real time).
func WithClock(now func() time.Time) Option { return func(n *NRF) { n.now = now } }

// WithSigningKey makes the NRF sign access tokens with key (a P-256 key)
// instead of Config.SigningKey or a generated one.
func WithSigningKey(key *ecdsa.PrivateKey) Option { return func(n *NRF) { n.key = key } }

// entry is one registered NF instance. It is immutable once published.
type entry struct {
	mgmt models.Nrf_NFMgmt_NFProfile
	disc models.Nrf_NFDisc_NFProfile // the same profile in the discovery model

	// want is the nfStatus the NF registered with; expired is set while
	// the NRF holds it SUSPENDED for missed heartbeats, and its next
	// heartbeat restores want.
	want    models.Nrf_NFMgmt_NFStatus
	expired bool

	// patterns holds the compiled supiRanges / tacRanges patterns of the
	// profile, keyed by their source.
	patterns map[string]*regexp.Regexp
}

// withStatus returns a copy of e with nfStatus s. The copy shares nested
// slices and maps with e, which nobody modifies.
func (e *entry) withStatus(s models.Nrf_NFMgmt_NFStatus, expired bool) *entry {
	c := *e
	c.mgmt.NfStatus, c.disc.NfStatus, c.expired = s, s, expired
	return &c
}

// snapshot is an immutable view of the registry.
type snapshot struct {
	byID   map[string]*entry
	byType map[sbi.NFType][]*entry // sorted by instance ID
}

// NRF implements sbi.NFManagement, sbi.NFDiscovery and
// sbi.AccessTokenService.
type NRF struct {
	cfg  Config // with defaults
	log  *slog.Logger
	now  func() time.Time
	id   string            // the NRF's NF instance ID
	key  *ecdsa.PrivateKey // signs access tokens; nil when they are off
	hbts int32             // heartBeatTimer in seconds, as answered

	snap     atomic.Pointer[snapshot]
	notifier atomic.Pointer[notifierRef]

	mu      sync.Mutex // serialises writers; readers use snap only
	seen    map[string]time.Time
	subs    map[string]*subscription
	started bool
	stopped bool
	ctx     context.Context // ends the goroutines; cancelled by Stop
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type notifierRef struct{ n sbi.NFStatusNotifier }

var (
	_ sbi.NFManagement       = (*NRF)(nil)
	_ sbi.NFDiscovery        = (*NRF)(nil)
	_ sbi.AccessTokenService = (*NRF)(nil)
)

// New returns an empty NRF. Nothing expires until Start.
func New(cfg Config, logger *slog.Logger, opts ...Option) (*NRF, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &NRF{cfg: cfg.withDefaults(), log: logger.With("nf", "nrf"), now: time.Now,
		seen: map[string]time.Time{}, subs: map[string]*subscription{}}
	for _, o := range opts {
		o(n)
	}
	n.hbts = int32(n.cfg.HeartBeatTimer / time.Second)
	if n.id = n.cfg.InstanceID; n.id == "" {
		n.id = identity.NewNFInstanceID()
	}
	if err := n.loadKey(); err != nil {
		return nil, err
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.snap.Store(&snapshot{byID: map[string]*entry{}, byType: map[sbi.NFType][]*entry{}})
	return n, nil
}

// InstanceID is the NRF's own NF instance ID (the iss of its tokens).
func (n *NRF) InstanceID() string { return n.id }

// SetNotifier sets the binding through which the NRF delivers NF status
// notifications (nil: none are sent). NFStatusNotify must honour its
// context's deadline: Stop waits for the call in progress.
func (n *NRF) SetNotifier(s sbi.NFStatusNotifier) {
	if s == nil {
		n.notifier.Store(nil)
		return
	}
	n.notifier.Store(&notifierRef{s})
}

// Start starts the sweeper that suspends and removes instances that stop
// sending heartbeats and drops expired subscriptions. Without Start,
// registrations never expire (an in-process unit whose NFs do not
// heartbeat).
func (n *NRF) Start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started || n.stopped {
		return
	}
	n.started = true
	n.wg.Add(1)
	go n.sweep()
}

// Stop ends the sweeper and the notification workers (a notification in
// progress is cancelled) and waits for them. The registry keeps answering;
// subscriptions are gone.
func (n *NRF) Stop() {
	n.mu.Lock()
	if !n.stopped {
		n.stopped = true
		n.cancel()
		clear(n.subs)
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// sweep applies the validity rules every half heartBeatTimer, so an
// instance is suspended at most that late.
func (n *NRF) sweep() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.HeartBeatTimer / 2)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			n.expire(n.now())
		}
	}
}

// expire suspends the instances silent for heartBeatTimer × grace, removes
// those silent for removeAfter (TS 29.510 §5.2.2.3.2) and drops the
// subscriptions past their validityTime (§5.2.2.5.2).
func (n *NRF) expire(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.snap.Load()
	var byID map[string]*entry // copied on the first change
	change := func() {
		if byID == nil {
			byID = maps.Clone(old.byID)
		}
	}
	for id, e := range old.byID {
		last := n.seen[id]
		idle := now.Sub(last)
		switch {
		case idle > n.cfg.RemoveAfter:
			change()
			delete(byID, id)
			delete(n.seen, id)
			n.logSilent("NF removed: no heartbeat", e, last, idle, "removeAfter", n.cfg.RemoveAfter)
			n.fanout(models.Nrf_NFMgmt_NotificationEventType_DEREGISTERED, e, now)
		case idle > n.cfg.suspendAfter() && !e.expired:
			change()
			if e.mgmt.NfStatus == models.Nrf_NFMgmt_NFStatus_SUSPENDED {
				byID[id] = e.withStatus(e.mgmt.NfStatus, true) // already not discoverable: nothing changes
				continue
			}
			s := e.withStatus(models.Nrf_NFMgmt_NFStatus_SUSPENDED, true)
			byID[id] = s
			n.logSilent("NF suspended: no heartbeat", e, last, idle, "suspendAfter", n.cfg.suspendAfter())
			n.fanout(models.Nrf_NFMgmt_NotificationEventType_PROFILE_CHANGED, s, now)
		}
	}
	if byID != nil {
		n.publish(byID)
	}
	for id, s := range n.subs {
		if !now.Before(s.expires) {
			n.log.Info("NF status subscription expired", "subscriptionId", id)
			n.dropSubscription(id)
		}
	}
}

// logSilent says, at Info (it is the NRF doing its job, TS 29.510
// §5.2.2.3.2, not a fault of its own), which instance went silent and why
// the NRF acted: the operator of an NF whose client never sends NFUpdate
// learns it here. limit names the rule applied and its duration.
func (n *NRF) logSilent(msg string, e *entry, last time.Time, idle time.Duration, limit string, after time.Duration) {
	n.log.Info(msg, "nfInstanceId", e.mgmt.NfInstanceId, "nfType", e.mgmt.NfType, "addresses", addresses(&e.mgmt),
		"reason", fmt.Sprintf("no heartbeat (NFUpdate) for %v since %s; heartBeatTimer %v, %s %v",
			idle.Round(time.Second), last.UTC().Format(time.RFC3339), n.cfg.HeartBeatTimer, limit, after),
		"lastHeartbeat", last.UTC(), "silentFor", idle.Round(time.Second), "heartBeatTimer", n.cfg.HeartBeatTimer, limit, after)
}

// addresses lists where an instance said it is: its FQDN, IP addresses
// and its services' endpoints, each once.
func addresses(p *models.Nrf_NFMgmt_NFProfile) []string {
	var out []string
	add := func(a string) {
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	add(p.Fqdn)
	for _, a := range p.Ipv4Addresses {
		add(a)
	}
	for _, a := range p.Ipv6Addresses {
		add(a)
	}
	svcs := slices.Clone(p.NfServices)
	for _, k := range slices.Sorted(maps.Keys(p.NfServiceList)) { // the Rel-16 map form
		svcs = append(svcs, p.NfServiceList[k])
	}
	for _, s := range svcs {
		for _, ep := range s.IpEndPoints {
			host := ep.Ipv4Address
			if host == "" {
				host = ep.Ipv6Address
			}
			if host != "" && ep.Port != 0 {
				host = net.JoinHostPort(host, strconv.Itoa(int(ep.Port)))
			}
			add(host)
		}
	}
	return out
}

// publish builds a snapshot from byID and makes it current. Caller holds n.mu.
func (n *NRF) publish(byID map[string]*entry) {
	s := &snapshot{byID: byID, byType: make(map[sbi.NFType][]*entry)}
	for _, e := range byID {
		s.byType[e.mgmt.NfType] = append(s.byType[e.mgmt.NfType], e)
	}
	for _, l := range s.byType {
		slices.SortFunc(l, func(a, b *entry) int { return strings.Compare(a.mgmt.NfInstanceId, b.mgmt.NfInstanceId) })
	}
	n.snap.Store(s)
}

// Register implements sbi.NFManagement (NFRegister, TS 29.510 §5.2.2.2).
// The stored profile is a deep copy; later changes to profile have no
// effect. A replaced profile that differs from the stored one is notified
// as NF_PROFILE_CHANGED, a new instance as NF_REGISTERED.
func (n *NRF) Register(ctx context.Context, profile *models.Nrf_NFMgmt_NFProfile) (*models.Nrf_NFMgmt_NFProfile, bool, error) {
	if err := checkProfile(profile); err != nil {
		return nil, false, err
	}
	e, err := n.newEntry(profile)
	if err != nil {
		return nil, false, err
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	old := n.snap.Load()
	prev := old.byID[e.mgmt.NfInstanceId]
	byID := maps.Clone(old.byID)
	byID[e.mgmt.NfInstanceId] = e
	n.publish(byID)
	n.seen[e.mgmt.NfInstanceId] = now // registering counts as a heartbeat
	switch {
	case prev == nil:
		n.log.Info("NF registered", "nfType", e.mgmt.NfType, "nfInstanceId", e.mgmt.NfInstanceId)
		n.fanout(models.Nrf_NFMgmt_NotificationEventType_REGISTERED, e, now)
	case !reflect.DeepEqual(prev.mgmt, e.mgmt):
		n.log.Info("NF profile replaced", "nfType", e.mgmt.NfType, "nfInstanceId", e.mgmt.NfInstanceId)
		n.fanout(models.Nrf_NFMgmt_NotificationEventType_PROFILE_CHANGED, e, now)
	}
	out := e.mgmt
	return &out, prev == nil, nil
}

// checkProfile checks the attributes of a profile that the NRF relies on
// (TS 29.510 §6.1.6.2.2, NFProfile: nfInstanceId, nfType and nfStatus are
// mandatory; an empty nfStatus is taken as REGISTERED).
func checkProfile(profile *models.Nrf_NFMgmt_NFProfile) error {
	if profile == nil || profile.NfInstanceId == "" {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfInstanceId")
	}
	if profile.NfType == "" {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfType")
	}
	if strings.ContainsAny(profile.NfInstanceId, "/?#") {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "nfInstanceId %q: not a URI path segment", profile.NfInstanceId)
	}
	switch profile.NfStatus {
	case "", models.Nrf_NFMgmt_NFStatus_REGISTERED, models.Nrf_NFMgmt_NFStatus_SUSPENDED, models.Nrf_NFMgmt_NFStatus_UNDISCOVERABLE:
	default:
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "nfStatus %q", profile.NfStatus)
	}
	return nil
}

// newEntry deep-copies profile into a new entry, with the heartBeatTimer
// and nfStatus the NRF decides.
func (n *NRF) newEntry(profile *models.Nrf_NFMgmt_NFProfile) (*entry, error) {
	// The management and discovery profiles are the same TS 29.510 JSON
	// object under two Go types: converting through JSON deep-copies too.
	raw, err := json.Marshal(profile)
	if err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "profile: %v", err)
	}
	e := &entry{}
	if err := json.Unmarshal(raw, &e.mgmt); err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "profile: %v", err)
	}
	// TS 29.510 §5.2.2.2.2: the NRF may change the heartBeatTimer the NF
	// proposed; tern asks the same of every NF.
	e.mgmt.HeartBeatTimer = n.hbts
	if e.mgmt.NfStatus == "" {
		e.mgmt.NfStatus = models.Nrf_NFMgmt_NFStatus_REGISTERED
	}
	e.want = e.mgmt.NfStatus
	if raw, err = json.Marshal(&e.mgmt); err == nil {
		err = json.Unmarshal(raw, &e.disc)
	}
	if err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "profile: %v", err)
	}
	if e.patterns, err = compilePatterns(&e.mgmt); err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseOptionalIEIncorrect, "%v", err)
	}
	return e, nil
}

// Deregister implements sbi.NFManagement (NFDeregister, TS 29.510 §5.2.2.4).
func (n *NRF) Deregister(ctx context.Context, nfInstanceID string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.snap.Load()
	e, ok := old.byID[nfInstanceID]
	if !ok {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseNFInstanceNotFound, "%q", nfInstanceID)
	}
	byID := maps.Clone(old.byID)
	delete(byID, nfInstanceID)
	delete(n.seen, nfInstanceID)
	n.publish(byID)
	n.log.Info("NF deregistered", "nfType", e.mgmt.NfType, "nfInstanceId", nfInstanceID)
	n.fanout(models.Nrf_NFMgmt_NotificationEventType_DEREGISTERED, e, n.now())
	return nil
}

// GetProfile implements sbi.NFManagement (NFProfileRetrieval, TS 29.510
// §5.2.2.9). The profile shares nested slices and maps with the registry:
// treat it as read-only.
func (n *NRF) GetProfile(ctx context.Context, nfInstanceID string) (*models.Nrf_NFMgmt_NFProfile, error) {
	e, ok := n.snap.Load().byID[nfInstanceID]
	if !ok {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseNFInstanceNotFound, "%q", nfInstanceID)
	}
	out := e.mgmt
	return &out, nil
}

// instanceURI is the nfInstanceUri of an instance (TS 29.510 §6.1.3.3).
func (n *NRF) instanceURI(id string) string {
	return n.cfg.APIRoot + "/nnrf-nfm/v1/nf-instances/" + id
}
