// Package nrfclient is the NF side of the NRF (TS 29.510), for any NF and
// over any binding of the sbi interfaces:
//
//   - Agent keeps the NF registered: it registers on Start, retrying with
//     backoff while the NRF is unreachable, heartbeats at the interval the
//     NRF asked for, registers again when a heartbeat finds the NRF has
//     forgotten the instance (404: the NRF restarted, or removed the
//     instance after missed heartbeats) and deregisters on Stop.
//   - Discoverer caches discovery results for their validityPeriod and
//     keeps answering from the cached, possibly stale, profiles while the
//     NRF is unreachable: a running core should not stop selecting peers
//     it already knows because its NRF is down.
//   - ProfileFor builds an NF profile whose services carry the endpoint
//     consumers call, and APIRoot reads it back from a discovered profile.
//   - TokenVerifier is the producer's check of an NRF access token
//     (TS 33.501 §13.4.1.2).
//
// The package depends on sbi, identity and the models (and jwt for the
// tokens), never on an NF package, so that every NF can use it.
package nrfclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// Agent defaults.
const (
	// DefaultHeartbeat is the interval used when the NRF names none.
	DefaultHeartbeat      = 10 * time.Second
	DefaultRetryMin       = 500 * time.Millisecond
	DefaultRetryMax       = 30 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultStopTimeout    = 2 * time.Second
	DefaultQuietFor       = 3 * time.Second
)

// AgentConfig configures an Agent.
type AgentConfig struct {
	// NRF is Nnrf_NFManagement through any binding. Required.
	NRF sbi.NFManagement
	// Profile is the NF's profile (see ProfileFor); NfInstanceId and NfType
	// are required. The agent keeps a copy.
	Profile *models.Nrf_NFMgmt_NFProfile
	Logger  *slog.Logger
	// HeartbeatInterval, when set, replaces the heartBeatTimer the NRF
	// answers. Only shorter makes sense: an NF may send heartbeats more
	// often than asked, not less (TS 29.510 §5.2.2.3.2). Tests use it.
	HeartbeatInterval time.Duration
	// RetryMin and RetryMax bound the exponential backoff between failed
	// registrations (defaults 500ms, 30s).
	RetryMin, RetryMax time.Duration
	// RequestTimeout bounds each request to the NRF (default 5s).
	RequestTimeout time.Duration
	// StopTimeout bounds the deregistration at Stop (default 2s).
	StopTimeout time.Duration
	// QuietFor is how long registration may fail before the agent says so
	// at Warn (default 3s; it logs each failure at Debug). NFs started
	// together with their NRF, as a script or a compose file starts them,
	// often ask before the NRF listens: that is a normal start, not a
	// failure to report.
	QuietFor time.Duration
}

// Agent keeps one NF instance registered with the NRF (TS 29.510 §5.2.2.2,
// §5.2.2.3.2, §5.2.2.4) from Start to Stop.
type Agent struct {
	cfg     AgentConfig
	log     *slog.Logger
	profile *models.Nrf_NFMgmt_NFProfile // what the agent registers

	mu         sync.Mutex
	stored     *models.Nrf_NFMgmt_NFProfile // the NRF's last answer
	registered bool
	attempted  bool // a registration was sent: Stop deregisters
	started    bool
	stopped    bool
	cancel     context.CancelFunc
	done       chan struct{}
}

// NewAgent checks cfg and returns an agent; nothing is sent before Start.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	if cfg.NRF == nil {
		return nil, errors.New("nrfclient: agent: no NRF")
	}
	if cfg.Profile == nil || cfg.Profile.NfInstanceId == "" || cfg.Profile.NfType == "" {
		return nil, errors.New("nrfclient: agent: the profile needs nfInstanceId and nfType")
	}
	for _, d := range []time.Duration{cfg.HeartbeatInterval, cfg.RetryMin, cfg.RetryMax, cfg.RequestTimeout, cfg.StopTimeout, cfg.QuietFor} {
		if d < 0 {
			return nil, fmt.Errorf("nrfclient: agent: negative duration %v", d)
		}
	}
	if cfg.RetryMin == 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = cfg.RetryMin
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.QuietFor == 0 {
		cfg.QuietFor = DefaultQuietFor
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// A deep copy, so that the caller may go on changing its profile.
	var p models.Nrf_NFMgmt_NFProfile
	raw, err := json.Marshal(cfg.Profile)
	if err == nil {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil {
		return nil, fmt.Errorf("nrfclient: agent: profile: %w", err)
	}
	if p.NfStatus == "" {
		p.NfStatus = models.Nrf_NFMgmt_NFStatus_REGISTERED
	}
	return &Agent{cfg: cfg, profile: &p, done: make(chan struct{}),
		log: cfg.Logger.With("nfType", p.NfType, "nfInstanceId", p.NfInstanceId)}, nil
}

// Start begins registering in the background and returns at once: an NF
// starts whether or not its NRF is up.
func (a *Agent) Start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.stopped {
		return
	}
	a.started = true
	var ctx context.Context
	ctx, a.cancel = context.WithCancel(context.Background())
	go a.run(ctx)
}

// Stop ends the agent's goroutine and, if it ever sent a registration,
// deregisters within StopTimeout. A 404 (the NRF no longer knows the
// instance) is not an error.
func (a *Agent) Stop() error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	started := a.started
	a.mu.Unlock()
	if !started {
		return nil
	}
	a.cancel()
	<-a.done
	a.mu.Lock()
	attempted := a.attempted
	a.registered = false
	a.mu.Unlock()
	if !attempted {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.StopTimeout)
	defer cancel()
	if err := a.cfg.NRF.Deregister(ctx, a.profile.NfInstanceId); err != nil && sbi.StatusOf(err) != http.StatusNotFound {
		return fmt.Errorf("nrfclient: deregister %s: %w", a.profile.NfInstanceId, err)
	}
	a.log.Info("deregistered from the NRF")
	return nil
}

// Registered reports whether the NRF accepted the last registration and
// no heartbeat has since found it forgotten.
func (a *Agent) Registered() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registered
}

// Profile is the profile as the NRF last answered it (with the
// heartBeatTimer it wants), or nil before the first registration.
func (a *Agent) Profile() *models.Nrf_NFMgmt_NFProfile {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stored
}

// run registers, then heartbeats, until ctx ends.
func (a *Agent) run(ctx context.Context) {
	defer close(a.done)
	for {
		if !a.registerUntilDone(ctx) {
			return
		}
		for a.Registered() {
			if !sleep(ctx, a.interval()) {
				return
			}
			a.heartbeat(ctx)
		}
	}
}

// registerUntilDone registers, retrying with exponential backoff and
// jitter; false when ctx ended first.
func (a *Agent) registerUntilDone(ctx context.Context) bool {
	backoff := a.cfg.RetryMin
	start := time.Now()
	warned := false
	for attempt := 1; ; attempt++ {
		err := a.register(ctx)
		if err == nil {
			if warned {
				a.log.Info("NRF registration succeeded after failures", "attempts", attempt, "after", time.Since(start).Round(time.Millisecond))
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		// Failures within QuietFor are a normal start beside the NRF.
		// Past it, say it once at Warn; the retries would fill the log
		// while the NRF is down.
		if failing := time.Since(start); !warned && failing >= a.cfg.QuietFor {
			warned = true
			a.log.Warn("NRF registration failing; retrying in the background", "err", err,
				"for", failing.Round(time.Millisecond), "attempts", attempt)
		} else {
			a.log.Debug("NRF registration failed", "err", err, "attempt", attempt, "retryIn", backoff)
		}
		if !sleep(ctx, jitter(backoff)) {
			return false
		}
		backoff = min(2*backoff, a.cfg.RetryMax)
	}
}

func (a *Agent) register(ctx context.Context) error {
	a.mu.Lock()
	a.attempted = true
	a.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	stored, _, err := a.cfg.NRF.Register(rctx, a.profile)
	if err != nil {
		return fmt.Errorf("nrfclient: register: %w", err)
	}
	if stored == nil {
		stored = a.profile
	}
	a.mu.Lock()
	a.stored, a.registered = stored, true
	a.mu.Unlock()
	a.log.Info("registered with the NRF", "heartBeatTimer", stored.HeartBeatTimer)
	return nil
}

// heartbeat sends one heartbeat (TS 29.510 §5.2.2.3.2). A 404 means the NRF
// has forgotten the instance, so the next round registers again.
func (a *Agent) heartbeat(ctx context.Context) {
	hctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	p, err := a.cfg.NRF.Update(hctx, a.profile.NfInstanceId, sbi.HeartbeatPatch(a.profile.NfStatus))
	switch {
	case err == nil:
		if p != nil { // 200: the NRF changed the profile (e.g. reinstated it)
			a.mu.Lock()
			a.stored = p
			a.mu.Unlock()
		}
	case ctx.Err() != nil:
	case sbi.StatusOf(err) == http.StatusNotFound:
		a.log.Warn("the NRF no longer knows this instance (restarted, or missed heartbeats): registering again", "err", err)
		a.mu.Lock()
		a.registered = false
		a.mu.Unlock()
	default:
		// The NRF may be down: keep heartbeating; when it is back it
		// answers 204, or 404 if it forgot the instance meanwhile.
		a.log.Warn("NRF heartbeat failed", "err", err)
	}
}

// interval is the time between heartbeats.
func (a *Agent) interval() time.Duration {
	if a.cfg.HeartbeatInterval > 0 {
		return a.cfg.HeartbeatInterval
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stored != nil && a.stored.HeartBeatTimer > 0 {
		return time.Duration(a.stored.HeartBeatTimer) * time.Second
	}
	return DefaultHeartbeat
}

// jitter spreads d by ±20% so that NFs restarted together do not retry
// in lockstep.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// sleep waits d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
