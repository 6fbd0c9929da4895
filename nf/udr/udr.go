// Package udr is the unified data repository: Nudr_DataRepository (TS 29.504,
// data model TS 29.505) over the subscriber store, for the UDM.
package udr

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/shardmap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/jsonpatch"
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

// Validate checks the configuration and names the bad field by its path
// in tern's configuration file, as udr.indLength: tern config reports
// the error as it is.
func (c *Config) Validate() error {
	if c.IndLength != nil && (*c.IndLength < 0 || *c.IndLength > 16) {
		return fmt.Errorf("udr.indLength: %d not in 0..16", *c.IndLength)
	}
	if c.SQNReserve != nil && (*c.SQNReserve < 0 || *c.SQNReserve > MaxSQNReserve) {
		return fmt.Errorf("udr.sqnReserve: %d not in 0..%d", *c.SQNReserve, MaxSQNReserve)
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

	ueData ueData // authentication-status and amf-3gpp-access (uedata.go)
}

// cachedSub is a subscriber record as read from the store.
type cachedSub struct {
	sub store.Subscriber
}

var (
	_ sbi.DataRepository               = (*UDR)(nil)
	_ sbi.AuthenticationDataRepository = (*UDR)(nil)
	_ sbi.ContextDataRepository        = (*UDR)(nil)
)

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
		cache: shardmap.New[string, *cachedSub](shardmap.HashString), ueData: newUEData()}, nil
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

// QueryAuthenticationSubscription implements sbi.DataRepository: the
// subscription with, as sequenceNumber, an SQN allocated to this read (see
// AllocateSQN), which the reader may use in an authentication vector as
// it is: a UDM that is not tern's (free5GC, Open5GS) reads the SQN and
// puts it in the vector it computes, so the read must be what hands it
// out, or two reads, or a read beside tern's own UDM, would issue the same
// SQN twice (TS 33.102 Annex C.1.1: a fresh SQN per vector). A read whose
// SQN is not used leaves a gap, which the USIM accepts (Annex C.2.1).
//
// Departure from HTTP's safe GET (RFC 9110 §9.2.1): the read changes
// SQN_HE. Nothing else a read returns changes with it, and tern's own UDM
// uses this SQN too, so that it costs no extra SQN.
func (u *UDR) QueryAuthenticationSubscription(ctx context.Context, supi string) (*models.Udr_DR_AuthenticationSubscription, error) {
	sub, err := u.get(supi)
	if err != nil {
		return nil, err
	}
	sqn, err := u.allocate(supi, "")
	if err != nil {
		return nil, err
	}
	return u.authSubscription(sub, sqn)
}

// authSubscription is sub's TS 29.505 AuthenticationSubscription with sqn
// as its sequenceNumber.
func (u *UDR) authSubscription(sub store.Subscriber, sqn uint64) (*models.Udr_DR_AuthenticationSubscription, error) {
	opc := []byte(sub.OP)
	if sub.OPType == store.OPTypeOP {
		// The TS 29.505 model carries only OPc (encOpcKey): derive it here.
		var err error
		if opc, err = milenage.OPc(sub.K, sub.OP); err != nil {
			return nil, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: deriving OPc: %v", sub.SUPI, err)
		}
	}
	return &models.Udr_DR_AuthenticationSubscription{
		AuthenticationMethod:          models.Udr_DR_AuthMethod_5_G_AKA,
		EncPermanentKey:               hex.EncodeToString(sub.K),
		EncOpcKey:                     hex.EncodeToString(opc),
		AuthenticationManagementField: hex.EncodeToString(sub.AMF),
		AlgorithmId:                   "milenage",
		SequenceNumber:                u.sqnModel(sqn),
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
	sqn, err := u.allocate(supi, sqnMS)
	if err != nil {
		return nil, err
	}
	return u.sqnModel(sqn), nil
}

// allocate advances supi's SQN_HE to the next SQN and returns it, first
// raising SQN_HE to sqnMS (12 hex digits) when that is given and higher.
func (u *UDR) allocate(supi string, sqnMS string) (uint64, error) {
	var ms uint64
	resync := sqnMS != ""
	if resync {
		v, err := parseSQN(sqnMS)
		if err != nil {
			return 0, sbi.IncorrectIE("/sqn", "sqnMS %q: %v", sqnMS, err)
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
		return 0, sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, "%s", supi)
	}
	if err != nil {
		return 0, sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: updating SQN: %v", supi, err)
	}
	return sqn, nil
}

// ModifyAuthenticationSubscription implements
// sbi.AuthenticationDataRepository: the JSON Patch (RFC 6902) of
// authentication-subscription (TS 29.505 ModifyAuthenticationSubscription)
// with which a UDM that is not tern's writes the SQN back, after the read
// that handed the SQN out (QueryAuthenticationSubscription). free5GC (on
// free5gc/openapi's Release 17 models) replaces /sequenceNumber with an
// object holding sqn, Open5GS /sequenceNumber/sqn with a string. An older
// free5GC, on its own earlier models, replaces /sequenceNumber with a
// string, refused as not a SequenceNumber: it reads K and OPc from
// members TS 29.505 does not have, so it cannot authenticate with this
// UDR at all. The patch applies to the resource as
// it is stored (sequenceNumber: SQN_HE).
//
// SQN_HE only moves forward: it becomes the higher of itself and the
// patched sqn, so that no SQN at or below the patched one is handed out
// again. A value at or below what was handed out already (a UDM patching
// SQN+1 after another read or tern's UDM took SQNs beyond it; a
// resynchronisation to an SQN_MS under SQN_HE) changes nothing and is no
// error: going back would issue again SQNs that USIMs may have seen, and
// TS 33.102 Annex C.1.1-C.2.1 asks for fresh SQNs, accepting any gap
// within Δ. A value past the durable reservation is reserved durably before
// the answer (store.Store.UpdateSQN), so a crash does not reissue it either.
// Only the SQN is taken from sequenceNumber: sqnScheme and indLength are
// the UDR's configuration (udr.indLength), and free5GC's object drops them.
//
// An SQN a UDM derives itself from AUTS (free5GC, Open5GS: SQN_MS+33) and
// patches is its own choice: the UDR cannot keep it from reusing one, only
// make sure that nothing it hands out afterwards is at or below it.
//
// Every other member is the provisioning's (`tern subscriber`): changing
// it is 403 MODIFICATION_NOT_ALLOWED (TS 29.500 §5.2.7.2), naming it.
func (u *UDR) ModifyAuthenticationSubscription(ctx context.Context, supi string, patch []models.PatchItem) error {
	sub, err := u.get(supi)
	if err != nil {
		return err
	}
	cur, err := u.authSubscription(sub, sub.SQN)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(cur)
	if err != nil {
		return fmt.Errorf("udr: %s: %w", supi, err)
	}
	out, err := jsonpatch.Apply(doc, patch)
	if err != nil {
		return patchProblem(err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(doc, &before); err != nil {
		return fmt.Errorf("udr: %s: %w", supi, err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		return sbi.IncorrectIE("/", "the patched resource is no JSON object: %v", err)
	}
	members := map[string]bool{}
	for m := range before {
		members[m] = true
	}
	for m := range after {
		members[m] = true
	}
	refused := sbi.NewProblem(http.StatusForbidden, sbi.CauseModificationNotAllowed, "%s: only sequenceNumber/sqn may change", supi)
	for _, m := range slices.Sorted(maps.Keys(members)) {
		switch {
		case m == "sequenceNumber" && after[m] == nil:
			refused.WithInvalidParam("/sequenceNumber", "removed")
		case m != "sequenceNumber" && !reflect.DeepEqual(before[m], after[m]):
			refused.WithInvalidParam("/"+m, "provisioned, not patched")
		}
	}
	if len(refused.InvalidParams) > 0 {
		return refused
	}
	var res models.Udr_DR_AuthenticationSubscription
	if err := json.Unmarshal(out, &res); err != nil || res.SequenceNumber == nil {
		return sbi.IncorrectIE("/sequenceNumber", "not a SequenceNumber: %v", err)
	}
	v, err := parseSQN(res.SequenceNumber.Sqn)
	if err != nil {
		return sbi.IncorrectIE("/sequenceNumber/sqn", "%q: %v", res.SequenceNumber.Sqn, err)
	}
	n, err := u.store.UpdateSQN(supi, u.headroom, func(cur uint64) (uint64, error) { return max(cur, v), nil })
	if errors.Is(err, store.ErrNotFound) {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseUserNotFound, "%s", supi)
	}
	if err != nil {
		return sbi.NewProblem(http.StatusInternalServerError, sbi.CauseSystemFailure, "%s: updating SQN: %v", supi, err)
	}
	u.log.Debug("SQN written back", "supi", supi, "patched", fmt.Sprintf("%012x", v), "sqn_he", fmt.Sprintf("%012x", n))
	return nil
}

// patchProblem answers a JSON Patch that does not apply (an unknown op, a
// malformed pointer, a path that is not there, a failed test): 400
// INVALID_MSG_FORMAT (TS 29.500 §5.2.7.2), the operation named in the
// detail.
func patchProblem(err error) error {
	return sbi.NewProblem(http.StatusBadRequest, sbi.CauseInvalidMsgFormat, "JSON Patch: %v", err)
}

// parseSQN reads an SQN as TS 29.505 writes it: 12 hex digits.
func parseSQN(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || len(s) != 12 {
		return 0, errors.New("not 12 hex digits")
	}
	return v, nil
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
