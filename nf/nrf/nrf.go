// Package nrf is the in-process NF repository: Nnrf_NFManagement register /
// deregister and Nnrf_NFDiscovery (TS 29.510).
//
// Discovery is lock-free: every change publishes a new immutable snapshot of
// the registry through an atomic pointer, and Discover reads whichever
// snapshot is current. Changes (NF start/stop) are rare, lookups are not.
package nrf

import (
	"context"
	"encoding/json"
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

// Config configures the NRF.
type Config struct {
	// ValidityPeriod is how long consumers may cache a discovery result
	// (TS 29.510 SearchResult.validityPeriod). Default 1h.
	ValidityPeriod time.Duration `yaml:"validityPeriod,omitempty"`
}

// DefaultValidityPeriod is used when Config.ValidityPeriod is zero.
const DefaultValidityPeriod = time.Hour

// Validate checks the configuration and names the bad field.
func (c *Config) Validate() error {
	if c.ValidityPeriod < 0 {
		return fmt.Errorf("nrf: validityPeriod: %v is negative", c.ValidityPeriod)
	}
	return nil
}

// entry is one registered NF instance.
type entry struct {
	mgmt models.Nrf_NFMgmt_NFProfile
	disc models.Nrf_NFDisc_NFProfile // the same profile in the discovery model
}

// snapshot is an immutable view of the registry.
type snapshot struct {
	byID   map[string]*entry
	byType map[sbi.NFType][]*entry // sorted by instance ID
}

// NRF implements sbi.NFManagement and sbi.NFDiscovery.
type NRF struct {
	validity time.Duration
	log      *slog.Logger

	mu   sync.Mutex // serialises writers; readers use snap only
	snap atomic.Pointer[snapshot]
}

var (
	_ sbi.NFManagement = (*NRF)(nil)
	_ sbi.NFDiscovery  = (*NRF)(nil)
)

// New returns an empty NRF.
func New(cfg Config, logger *slog.Logger) (*NRF, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &NRF{validity: cfg.ValidityPeriod, log: logger.With("nf", "nrf")}
	if n.validity == 0 {
		n.validity = DefaultValidityPeriod
	}
	n.snap.Store(&snapshot{byID: map[string]*entry{}, byType: map[sbi.NFType][]*entry{}})
	return n, nil
}

// publish builds a snapshot from byID and makes it current. Caller holds n.mu.
func (n *NRF) publish(byID map[string]*entry) {
	s := &snapshot{byID: byID, byType: make(map[sbi.NFType][]*entry)}
	for _, e := range byID {
		s.byType[e.mgmt.NfType] = append(s.byType[e.mgmt.NfType], e)
	}
	for _, l := range s.byType {
		slices.SortFunc(l, func(a, b *entry) int {
			if a.mgmt.NfInstanceId < b.mgmt.NfInstanceId {
				return -1
			}
			if a.mgmt.NfInstanceId > b.mgmt.NfInstanceId {
				return 1
			}
			return 0
		})
	}
	n.snap.Store(s)
}

// Register implements sbi.NFManagement (NFRegister, TS 29.510 §5.2.2.2).
// The stored profile is a deep copy; later changes to profile have no effect.
func (n *NRF) Register(ctx context.Context, profile *models.Nrf_NFMgmt_NFProfile) (*models.Nrf_NFMgmt_NFProfile, error) {
	if profile == nil || profile.NfInstanceId == "" {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfInstanceId")
	}
	if profile.NfType == "" {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "nfType")
	}
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
	if err := json.Unmarshal(raw, &e.disc); err != nil {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "profile: %v", err)
	}
	if e.mgmt.NfStatus == "" {
		e.mgmt.NfStatus = models.Nrf_NFMgmt_NFStatus_REGISTERED
		e.disc.NfStatus = models.Nrf_NFMgmt_NFStatus_REGISTERED
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.snap.Load()
	byID := make(map[string]*entry, len(old.byID)+1)
	for k, v := range old.byID {
		byID[k] = v
	}
	byID[e.mgmt.NfInstanceId] = e
	n.publish(byID)
	n.log.Info("NF registered", "nfType", e.mgmt.NfType, "nfInstanceId", e.mgmt.NfInstanceId)
	out := e.mgmt
	return &out, nil
}

// Deregister implements sbi.NFManagement (NFDeregister, TS 29.510 §5.2.2.4).
func (n *NRF) Deregister(ctx context.Context, nfInstanceID string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.snap.Load()
	if _, ok := old.byID[nfInstanceID]; !ok {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseNFInstanceNotFound, "%q", nfInstanceID)
	}
	byID := make(map[string]*entry, len(old.byID))
	for k, v := range old.byID {
		if k != nfInstanceID {
			byID[k] = v
		}
	}
	n.publish(byID)
	n.log.Info("NF deregistered", "nfInstanceId", nfInstanceID)
	return nil
}

// Discover implements sbi.NFDiscovery (TS 29.510 §5.3.2.2). Only
// REGISTERED instances are returned. The profiles in the result share
// nested slices and maps with the registry: treat them as read-only.
func (n *NRF) Discover(ctx context.Context, target sbi.NFType, q sbi.DiscoveryQuery) (*models.Nrf_NFDisc_SearchResult, error) {
	if target == "" {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "target-nf-type")
	}
	s := n.snap.Load()
	res := &models.Nrf_NFDisc_SearchResult{ValidityPeriod: int32(n.validity / time.Second)}
	for _, e := range s.byType[target] {
		if e.mgmt.NfStatus == models.Nrf_NFMgmt_NFStatus_REGISTERED && matches(&e.mgmt, q) {
			res.NfInstances = append(res.NfInstances, e.disc)
		}
	}
	res.NumNfInstComplete = int32(len(res.NfInstances))
	return res, nil
}

// matches applies the query filters. A profile that leaves a list empty
// (no S-NSSAIs, no PLMNs) places no restriction (TS 29.510 §6.1.6.2.2).
func matches(p *models.Nrf_NFMgmt_NFProfile, q sbi.DiscoveryQuery) bool {
	if q.RequesterNFType != "" && len(p.AllowedNfTypes) > 0 && !slices.Contains(p.AllowedNfTypes, q.RequesterNFType) {
		return false
	}
	if len(q.ServiceNames) > 0 && !offersAny(p, q.ServiceNames) {
		return false
	}
	if len(q.SNSSAIs) > 0 && len(p.SNssais) > 0 && !slices.ContainsFunc(q.SNSSAIs, func(s identity.SNSSAI) bool { return servesSlice(p.SNssais, s) }) {
		return false
	}
	if q.PLMN != nil && len(p.PlmnList) > 0 && !slices.Contains(p.PlmnList, sbi.PLMNToModel(*q.PLMN)) {
		return false
	}
	return true
}

func offersAny(p *models.Nrf_NFMgmt_NFProfile, names []models.Nrf_NFMgmt_ServiceName) bool {
	for _, s := range p.NfServices {
		if slices.Contains(names, s.ServiceName) {
			return true
		}
	}
	for _, s := range p.NfServiceList {
		if slices.Contains(names, s.ServiceName) {
			return true
		}
	}
	return false
}

func servesSlice(list []models.ExtSnssai, s identity.SNSSAI) bool {
	want := sbi.SNSSAIToModel(s)
	for _, e := range list {
		if e.Sst == want.Sst && (strings.EqualFold(e.Sd, want.Sd) || e.WildcardSd) {
			return true
		}
	}
	return false
}
