// Package udr is the unified data repository: Nudr_DataRepository (TS 29.504,
// data model TS 29.505) over the subscriber store, for the UDM.
package udr

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/shardmap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/store"
)

// Config configures the UDR.
type Config struct {
	// IndLength is the number of IND bits at the end of SQN (TS 33.102
	// Annex C.1.1); 0 makes SQN a plain counter. Default 5.
	IndLength *int `yaml:"indLength,omitempty"`
	// SQNReserve is how many authentication vectors' worth of SQNs the
	// store reserves durably at a time (see AllocateSQN); 0 makes every
	// SQN durable, one fsync per authentication. Default 1024.
	SQNReserve *int `yaml:"sqnReserve,omitempty"`
}

// DefaultIndLength is the IND length suggested by TS 33.102 Annex C.3.2.
const DefaultIndLength = 5

// DefaultSQNReserve is the default Config.SQNReserve: one fsync per 1024
// authentications of a subscriber, and a restart after a crash moves SEQ
// forward by at most 1024, far inside the USIM's Δ (TS 33.102 Annex C.2.1;
// Annex C.3 suggests Δ = 2^28).
const DefaultSQNReserve = 1024

// MaxSQNReserve bounds Config.SQNReserve so that the SEQ jump after a crash
// stays well inside the USIM's Δ.
const MaxSQNReserve = 1 << 20

// Validate checks the configuration and names the bad field.
func (c *Config) Validate() error {
	if c.IndLength != nil && (*c.IndLength < 0 || *c.IndLength > 16) {
		return fmt.Errorf("udr: indLength: %d not in 0..16", *c.IndLength)
	}
	if c.SQNReserve != nil && (*c.SQNReserve < 0 || *c.SQNReserve > MaxSQNReserve) {
		return fmt.Errorf("udr: sqnReserve: %d not in 0..%d", *c.SQNReserve, MaxSQNReserve)
	}
	return nil
}

// SubscriberStore is what the UDR needs from a subscriber store;
// *store.Store implements it over SQLite or PostgreSQL.
type SubscriberStore interface {
	Get(supi string) (store.Subscriber, error)
	// UpdateSQN sets SQN_HE to next(SQN_HE) atomically, also against other
	// processes, and returns it once no restart can issue it again, durably
	// reserving headroom SQNs beyond it when it must. next may run more
	// than once per call, so it must depend only on its argument.
	UpdateSQN(supi string, headroom uint64, next func(cur uint64) (uint64, error)) (uint64, error)
	// ReserveSQNs durably reserves headroom SQNs for every subscriber that
	// has less than half of that left, in one write.
	ReserveSQNs(headroom uint64) error
}

// UDR implements sbi.DataRepository.
//
// # Reads and the cache
//
// Authentication reads the subscriber from the store every time (its K,
// OPc and SQN must be current). The subscription data sets (am-data,
// sm-data, smf-select-data), read several times per registration, come
// from a cache of the subscriber records while Follow runs: Follow drops a
// subscriber's entry before it hands the change on, and the UDM records a
// UE's registration before it checks the subscriber exists, so a deletion
// is seen either by that check or by the change's notification. Without
// Follow (no change feed) nothing is cached.
type UDR struct {
	store     SubscriberStore
	indLength int
	headroom  uint64 // SQNReserve vectors in SQN units
	log       *slog.Logger

	following atomic.Bool // Follow is reading the change feed: the cache is coherent
	cache     *shardmap.Map[string, *cachedSub]
}

// cachedSub is a subscriber record as read from the store.
type cachedSub struct {
	sub store.Subscriber
}

var _ sbi.DataRepository = (*UDR)(nil)

// New returns a UDR over st.
func New(cfg Config, st SubscriberStore, logger *slog.Logger) (*UDR, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("udr: nil store")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ind := DefaultIndLength
	if cfg.IndLength != nil {
		ind = *cfg.IndLength
	}
	reserve := DefaultSQNReserve
	if cfg.SQNReserve != nil {
		reserve = *cfg.SQNReserve
	}
	// Each vector advances SEQ, the bits above IND, by one (Annex C.1.1).
	headroom := uint64(reserve) << ind
	if err := st.ReserveSQNs(headroom); err != nil {
		return nil, fmt.Errorf("udr: reserving SQNs: %w", err)
	}
	return &UDR{store: st, indLength: ind, headroom: headroom, log: logger.With("nf", "udr"),
		cache: shardmap.New[string, *cachedSub](shardmap.HashString)}, nil
}

func (u *UDR) get(supi string) (store.Subscriber, error) {
	sub, err := u.store.Get(supi)
	if errors.Is(err, store.ErrNotFound) {
		u.cache.Delete(supi)
		return sub, sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, "%s", supi)
	}
	if err != nil {
		return sub, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "reading %s: %v", supi, err)
	}
	if u.following.Load() {
		u.cache.Put(supi, &cachedSub{sub: sub})
	}
	return sub, nil
}

// subscription is get for the subscription data sets: from the cache while
// Follow keeps it coherent (see UDR). The SQN of a cached record is stale;
// nothing that reads it here uses it.
func (u *UDR) subscription(supi string) (store.Subscriber, error) {
	if u.following.Load() {
		if c := u.cache.Get(supi); c != nil {
			return c.sub, nil
		}
	}
	return u.get(supi)
}

// QueryAuthenticationSubscription implements sbi.DataRepository.
func (u *UDR) QueryAuthenticationSubscription(ctx context.Context, supi string) (*models.Udr_DR_AuthenticationSubscription, error) {
	sub, err := u.get(supi)
	if err != nil {
		return nil, err
	}
	opc := []byte(sub.OP)
	if sub.OPType == store.OPTypeOP {
		// The TS 29.505 model carries only OPc (encOpcKey): derive it here.
		if opc, err = milenage.OPc(sub.K, sub.OP); err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: deriving OPc: %v", supi, err)
		}
	}
	// sequenceNumber is SQN_HE; what the store keeps durable is a
	// reservation at or above it (see AllocateSQN).
	return &models.Udr_DR_AuthenticationSubscription{
		AuthenticationMethod:          models.Udr_DR_AuthMethod_5_G_AKA,
		EncPermanentKey:               hex.EncodeToString(sub.K),
		EncOpcKey:                     hex.EncodeToString(opc),
		AuthenticationManagementField: hex.EncodeToString(sub.AMF),
		AlgorithmId:                   "milenage",
		SequenceNumber:                u.sqnModel(sub.SQN),
		Supi:                          sub.SUPI,
	}, nil
}

func (u *UDR) sqnModel(sqn uint64) *models.Udr_DR_SequenceNumber {
	return &models.Udr_DR_SequenceNumber{
		SqnScheme: models.Udr_DR_SqnScheme_NON_TIME_BASED,
		Sqn:       fmt.Sprintf("%012x", sqn),
		IndLength: int32(u.indLength),
	}
}

// NextSQN returns the SQN of the next authentication vector after cur, with
// IND bits of IND (TS 33.102 Annex C.1.1, C.3.2): SEQ increments by one and
// IND advances cyclically, so consecutive SQNs strictly increase. The result
// wraps at 48 bits.
func NextSQN(cur uint64, indLength int) uint64 {
	mask := uint64(1)<<indLength - 1
	seq, ind := cur>>indLength, cur&mask
	return ((seq+1)<<indLength | (ind+1)&mask) & store.MaxSQN
}

// AllocateSQN implements sbi.DataRepository.
//
// Departure from TS 29.505/TS 29.504: there the UDM writes each new
// sequenceNumber into the stored authentication subscription, i.e. one
// durable write per authentication. tern's store commits each new SQN_HE
// atomically but without waiting for the disk, and makes durable only a
// reservation SQNReserve vectors ahead, written when an allocation would
// pass it (and before that SQN is returned); after a power failure SQN_HE
// resumes at the reservation. SQNs then jump forward, which the USIM
// accepts (TS 33.102 Annex C.2.1, C.3), and none is reused.
func (u *UDR) AllocateSQN(ctx context.Context, supi string, sqnMS string) (*models.Udr_DR_SequenceNumber, error) {
	var ms uint64
	resync := sqnMS != ""
	if resync {
		v, err := strconv.ParseUint(sqnMS, 16, 64)
		if err != nil || len(sqnMS) != 12 {
			return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEIncorrect, "sqnMS %q is not 12 hex digits", sqnMS)
		}
		ms = v
	}
	sqn, err := u.store.UpdateSQN(supi, u.headroom, func(cur uint64) (uint64, error) {
		// TS 33.102 Annex C.3.4: if the next SQN from SQN_HE would not be
		// accepted by the USIM (SQN_MS >= it), SQN_HE takes SQN_MS first.
		// When that passes the reservation, the store logs a new one
		// beyond it before the SQN is returned.
		if resync && ms > cur {
			cur = ms
		}
		return NextSQN(cur, u.indLength), nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, "%s", supi)
	}
	if err != nil {
		return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: updating SQN: %v", supi, err)
	}
	return u.sqnModel(sqn), nil
}

// QueryAmData implements sbi.DataRepository. tern keeps one subscription per
// subscriber, so the serving PLMN does not select different data.
func (u *UDR) QueryAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_AccessAndMobilitySubscriptionData, error) {
	sub, err := u.subscription(supi)
	if err != nil {
		return nil, err
	}
	nssai := &models.Udm_SDM_Nssai{}
	for _, sl := range sub.Slices {
		id, err := sl.ID()
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: %v", supi, err)
		}
		// TS 29.503 Nssai: defaultSingleNssais and singleNssais (the
		// non-default ones) are disjoint lists.
		if sl.Default {
			nssai.DefaultSingleNssais = append(nssai.DefaultSingleNssais, sbi.SNSSAIToModel(id))
		} else {
			nssai.SingleNssais = append(nssai.SingleNssais, sbi.SNSSAIToModel(id))
		}
	}
	am := &models.Udr_DR_AccessAndMobilitySubscriptionData{
		Gpsis: append([]string(nil), sub.GPSIs...),
		Nssai: nssai,
	}
	if sub.UEAMBR != (store.AMBR{}) {
		am.SubscribedUeAmbr = &models.AmbrRm{Uplink: sub.UEAMBR.Uplink, Downlink: sub.UEAMBR.Downlink}
	}
	return am, nil
}

// QuerySmData implements sbi.DataRepository: one entry per subscribed
// S-NSSAI (matching q.SNSSAI when set) with its DNN configurations (matching
// q.DNN when set). Slices left with no DNN are omitted.
func (u *UDR) QuerySmData(ctx context.Context, supi string, q sbi.SmDataQuery) (*models.Udr_DR_SmSubsData, error) {
	sub, err := u.subscription(supi)
	if err != nil {
		return nil, err
	}
	out := &models.Udr_DR_SmSubsData{}
	for _, sl := range sub.Slices {
		id, err := sl.ID()
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: %v", supi, err)
		}
		if q.SNSSAI != nil && *q.SNSSAI != id {
			continue
		}
		confs := make(map[string]models.Udm_SDM_DnnConfiguration, len(sl.DNNs))
		for _, d := range sl.DNNs {
			if q.DNN != "" && q.DNN != d.Name {
				continue
			}
			confs[d.Name] = dnnConfiguration(d)
		}
		if len(confs) == 0 {
			continue
		}
		snssai := sbi.SNSSAIToModel(id)
		out.IndividualSmSubsData = append(out.IndividualSmSubsData, models.Udm_SDM_SessionManagementSubscriptionData{
			SingleNssai:       &snssai,
			DnnConfigurations: confs,
		})
	}
	return out, nil
}

// QuerySmfSelectData implements sbi.DataRepository: the DNNs of every
// subscribed S-NSSAI with their default DNN indicator (TS 29.505
// SmfSelectionSubscriptionData, TS 29.503 §6.1.6.2.8). Slices with no DNN
// are omitted; the map key is the S-NSSAI's TS 29.571 string form.
func (u *UDR) QuerySmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udr_DR_SmfSelectionSubscriptionData, error) {
	sub, err := u.subscription(supi)
	if err != nil {
		return nil, err
	}
	out := &models.Udr_DR_SmfSelectionSubscriptionData{SubscribedSnssaiInfos: map[string]models.Udm_SDM_SnssaiInfo{}}
	for _, sl := range sub.Slices {
		id, err := sl.ID()
		if err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: %v", supi, err)
		}
		if len(sl.DNNs) == 0 {
			continue
		}
		info := models.Udm_SDM_SnssaiInfo{}
		for _, d := range sl.DNNs {
			info.DnnInfos = append(info.DnnInfos, models.Udm_SDM_DnnInfo{Dnn: d.Name, DefaultDnnIndicator: d.Default})
		}
		out.SubscribedSnssaiInfos[id.String()] = info
	}
	return out, nil
}

// dnnConfiguration maps a stored DNN to TS 29.503 DnnConfiguration: IPv4,
// SSC mode 1 (what tern's SMF supports), the default QoS and session AMBR.
func dnnConfiguration(d store.DNN) models.Udm_SDM_DnnConfiguration {
	return models.Udm_SDM_DnnConfiguration{
		PduSessionTypes: &models.Udm_SDM_PduSessionTypes{
			DefaultSessionType:  models.PduSessionType_IPV4,
			AllowedSessionTypes: []models.PduSessionType{models.PduSessionType_IPV4},
		},
		SscModes: &models.Udm_SDM_SscModes{
			DefaultSscMode:  models.SscMode_1,
			AllowedSscModes: []models.SscMode{models.SscMode_1},
		},
		Var5gQosProfile: &models.SubscribedDefaultQos{
			Var5qi: int32(d.FiveQI),
			Arp: &models.Arp{
				PriorityLevel: int32(d.ARPPriority),
				PreemptCap:    models.PreemptionCapability_NOT_PREEMPT,
				PreemptVuln:   models.PreemptionVulnerability_PREEMPTABLE,
			},
		},
		SessionAmbr: &models.Ambr{Uplink: d.SessionAMBR.Uplink, Downlink: d.SessionAMBR.Downlink},
	}
}
