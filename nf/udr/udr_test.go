package udr

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/store"
)

func newUDR(t *testing.T, cfg Config) (*UDR, *store.Store) {
	t.Helper()
	return newUDRAt(t, cfg, filepath.Join(t.TempDir(), "db"))
}

// newUDRAt is newUDR on the store file at path.
func newUDRAt(t *testing.T, cfg Config, path string) (*UDR, *store.Store) {
	t.Helper()
	st, err := store.OpenOptions(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	subs := store.DefaultSubscribers(2)
	subs[1].OP = store.HexBytes(bytes.Repeat([]byte{0x11}, 16))
	subs[1].OPType = store.OPTypeOP
	subs[1].Slices = append(subs[1].Slices, store.Slice{SNSSAI: "2", DNNs: []store.DNN{
		{Name: "ims", FiveQI: 5, ARPPriority: 1, SessionAMBR: store.AMBR{Uplink: "10 Mbps", Downlink: "10 Mbps"}},
		{Name: "internet", FiveQI: 9, ARPPriority: 8},
	}})
	if _, err := st.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	u, err := New(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u, st
}

func TestNextSQN(t *testing.T) {
	for _, c := range []struct {
		cur  uint64
		ind  int
		want uint64
	}{
		{0, 5, 0x21},         // SEQ 0 IND 0 -> SEQ 1 IND 1
		{0x21, 5, 0x42},      // SEQ 1 IND 1 -> SEQ 2 IND 2
		{0x3f, 5, 0x40},      // IND 31 wraps to 0, SEQ still increases
		{41, 0, 42},          // plain counter
		{store.MaxSQN, 0, 0}, // 48-bit wrap
	} {
		if got := NextSQN(c.cur, c.ind); got != c.want {
			t.Errorf("NextSQN(%#x, %d) = %#x, want %#x", c.cur, c.ind, got, c.want)
		}
	}
	for cur := uint64(0); cur < 200; cur++ {
		if NextSQN(cur, 5) <= cur {
			t.Fatalf("NextSQN(%d) does not increase", cur)
		}
	}
}

func TestAuthenticationSubscription(t *testing.T) {
	u, _ := newUDR(t, Config{})
	ctx := context.Background()
	a, err := u.QueryAuthenticationSubscription(ctx, store.DemoSUPI(1))
	if err != nil {
		t.Fatal(err)
	}
	// The read hands out the SQN after SQN_HE 0: SEQ 1, IND 1.
	if a.EncPermanentKey != "8baf473f2f8fd09487cccbd7097c6862" || a.EncOpcKey != "8e27b6af0e692e750f32667a3b14605d" ||
		a.AuthenticationManagementField != "8000" || a.SequenceNumber.Sqn != "000000000021" {
		t.Fatalf("demo subscription = %+v", a)
	}
	// Provisioned with OP: the UDR answers with the derived OPc.
	a, err = u.QueryAuthenticationSubscription(ctx, store.DemoSUPI(2))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := hex.DecodeString(a.EncPermanentKey)
	want, _ := milenage.OPc(k, bytes.Repeat([]byte{0x11}, 16))
	if a.EncOpcKey != hex.EncodeToString(want) {
		t.Fatalf("OPc from OP = %s, want %x", a.EncOpcKey, want)
	}
	if _, err := u.QueryAuthenticationSubscription(ctx, "imsi-001010000000001"); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestAllocateSQN(t *testing.T) {
	zero := 0
	u, st := newUDR(t, Config{IndLength: &zero})
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	for want := 1; want <= 3; want++ {
		s, err := u.AllocateSQN(ctx, supi, "")
		if err != nil {
			t.Fatal(err)
		}
		if s.Sqn != hex.EncodeToString([]byte{0, 0, 0, 0, 0, byte(want)}) {
			t.Fatalf("allocation %d: sqn %s", want, s.Sqn)
		}
	}
	// Resync forward: SQN_HE jumps past SQN_MS.
	s, err := u.AllocateSQN(ctx, supi, "000000001000")
	if err != nil || s.Sqn != "000000001001" {
		t.Fatalf("resync forward: %+v, %v", s, err)
	}
	// Resync with an old SQN_MS: the next SQN is acceptable as it is.
	s, err = u.AllocateSQN(ctx, supi, "000000000005")
	if err != nil || s.Sqn != "000000001002" {
		t.Fatalf("resync backward: %+v, %v", s, err)
	}
	if sub, _ := st.Get(supi); sub.SQN != 0x1002 {
		t.Fatalf("stored SQN %#x", sub.SQN)
	}
	if _, err := u.AllocateSQN(ctx, supi, "12"); !errors.Is(err, sbi.ErrMandatoryIEIncorrect) {
		t.Fatalf("bad sqnMS: %v", err)
	}
	if _, err := u.AllocateSQN(ctx, "imsi-001010000000001", ""); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestAmAndSmData(t *testing.T) {
	u, _ := newUDR(t, Config{})
	ctx := context.Background()
	plmn := identity.PLMN{MCC: "208", MNC: "93"}
	am, err := u.QueryAmData(ctx, store.DemoSUPI(2), plmn)
	if err != nil {
		t.Fatal(err)
	}
	if len(am.Nssai.DefaultSingleNssais) != 1 || am.Nssai.DefaultSingleNssais[0].Sd != "010203" ||
		len(am.Nssai.SingleNssais) != 1 || am.Nssai.SingleNssais[0].Sst != 2 {
		t.Fatalf("nssai = %+v", am.Nssai)
	}
	if am.SubscribedUeAmbr == nil || am.SubscribedUeAmbr.Downlink != "2 Gbps" {
		t.Fatalf("ue-ambr = %+v", am.SubscribedUeAmbr)
	}

	sm, err := u.QuerySmData(ctx, store.DemoSUPI(2), sbi.SmDataQuery{PLMN: plmn})
	if err != nil || len(sm.IndividualSmSubsData) != 2 {
		t.Fatalf("all sm data: %+v, %v", sm, err)
	}
	s2 := identity.SNSSAI{SST: 2, SD: identity.NoSD}
	sm, _ = u.QuerySmData(ctx, store.DemoSUPI(2), sbi.SmDataQuery{SNSSAI: &s2, DNN: "ims"})
	if len(sm.IndividualSmSubsData) != 1 {
		t.Fatalf("filtered sm data: %+v", sm)
	}
	d := sm.IndividualSmSubsData[0]
	ims, ok := d.DnnConfigurations["ims"]
	if !ok || len(d.DnnConfigurations) != 1 || ims.Var5gQosProfile.Var5qi != 5 || ims.Var5gQosProfile.Arp.PriorityLevel != 1 ||
		ims.SessionAmbr.Uplink != "10 Mbps" || d.SingleNssai.Sst != 2 {
		t.Fatalf("ims configuration = %+v", d)
	}
	sm, _ = u.QuerySmData(ctx, store.DemoSUPI(1), sbi.SmDataQuery{DNN: "mms"})
	if len(sm.IndividualSmSubsData) != 0 {
		t.Fatalf("unsubscribed DNN returned: %+v", sm)
	}
	if _, err := u.QuerySmData(ctx, "imsi-001010000000001", sbi.SmDataQuery{}); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := 17
	if err := (&Config{IndLength: &bad}).Validate(); err == nil {
		t.Fatal("indLength 17 accepted")
	}
	for _, r := range []int{-1, MaxSQNReserve + 1} {
		if err := (&Config{SQNReserve: &r}).Validate(); err == nil {
			t.Fatalf("sqnReserve %d accepted", r)
		}
	}
	if _, err := New(Config{}, nil, nil); err == nil {
		t.Fatal("nil store accepted")
	}
}

// newDurableUDR returns a UDR over a store at path that fsyncs.
func newDurableUDR(t *testing.T, cfg Config, path string) (*UDR, *store.Store) {
	t.Helper()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.PutAll(store.DefaultSubscribers(1), false); err != nil {
		t.Fatal(err)
	}
	u, err := New(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u, st
}

// crashCopy opens the store at path again while the first Store is never
// closed: what a process that crashed leaves to the next one.
func crashCopy(t *testing.T, cfg Config, path string) (*UDR, *store.Store) {
	t.Helper()
	return newDurableUDR(t, cfg, path)
}

func sqnValue(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// After a crash, the next SQN is above every SQN issued before, and SEQ
// jumps by at most SQNReserve vectors (after a power failure the store
// resumes at the reservation; after a process crash exactly).
func TestAllocateSQNAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	reserve := 16
	cfg := Config{SQNReserve: &reserve}
	u, st := newDurableUDR(t, cfg, path)
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	var last uint64
	for range 100 {
		s, err := u.AllocateSQN(ctx, supi, "")
		if err != nil {
			t.Fatal(err)
		}
		if v := sqnValue(t, s.Sqn); v <= last {
			t.Fatalf("SQN %#x after %#x", v, last)
		} else {
			last = v
		}
	}
	// 100 vectors with a reservation of 16: about one durable write per 16.
	if n := st.Syncs(); n > 100/16+2 {
		t.Errorf("%d fsyncs for 100 allocations with sqnReserve 16", n)
	}
	r, _ := crashCopy(t, cfg, path)
	s, err := r.AllocateSQN(ctx, supi, "")
	if err != nil {
		t.Fatal(err)
	}
	v := sqnValue(t, s.Sqn)
	if v <= last {
		t.Fatalf("SQN after crash %#x, not above %#x issued before", v, last)
	}
	if jump := v>>DefaultIndLength - last>>DefaultIndLength; jump > uint64(reserve)+1 {
		t.Fatalf("SEQ jumped by %d across the crash, sqnReserve %d", jump, reserve)
	}
}

// A resynchronisation to an SQN_MS beyond the reservation is durable before
// the SQN is returned.
func TestAllocateSQNResyncPastReservation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	u, _ := newDurableUDR(t, Config{}, path)
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	if _, err := u.AllocateSQN(ctx, supi, ""); err != nil {
		t.Fatal(err)
	}
	const ms = 0x0000f0000000 // far beyond the default reservation
	s, err := u.AllocateSQN(ctx, supi, fmt.Sprintf("%012x", ms))
	if err != nil {
		t.Fatal(err)
	}
	resynced := sqnValue(t, s.Sqn)
	if resynced <= ms {
		t.Fatalf("resync to %#x gave %#x", ms, resynced)
	}
	r, _ := crashCopy(t, Config{}, path)
	s, err = r.AllocateSQN(ctx, supi, "")
	if err != nil {
		t.Fatal(err)
	}
	if v := sqnValue(t, s.Sqn); v <= resynced {
		t.Fatalf("SQN after crash %#x, not above the resynchronised %#x", v, resynced)
	}
}

// sqnReserve 0 restores one durable write per authentication.
func TestSQNReserveZero(t *testing.T) {
	zero := 0
	u, st := newDurableUDR(t, Config{SQNReserve: &zero}, filepath.Join(t.TempDir(), "db"))
	before := st.Syncs()
	for range 5 {
		if _, err := u.AllocateSQN(context.Background(), store.DemoSUPI(1), ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.Syncs() - before; n != 5 {
		t.Fatalf("sqnReserve 0: %d fsyncs for 5 allocations, want 5", n)
	}
}

// smf-select-data lists each slice's DNNs with the default DNN indicator,
// keyed by the S-NSSAI's TS 29.571 string form.
func TestSmfSelectData(t *testing.T) {
	u, _ := newUDR(t, Config{})
	ctx := context.Background()
	sel, err := u.QuerySmfSelectData(ctx, store.DemoSUPI(2), identity.PLMN{MCC: "208", MNC: "93"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.SubscribedSnssaiInfos) != 2 {
		t.Fatalf("slices %+v", sel.SubscribedSnssaiInfos)
	}
	defaults := map[string]map[string]bool{}
	for key, info := range sel.SubscribedSnssaiInfos {
		defaults[key] = map[string]bool{}
		for _, d := range info.DnnInfos {
			defaults[key][d.Dnn] = d.DefaultDnnIndicator
		}
	}
	want := map[string]map[string]bool{
		"1-010203": {store.DemoDNN: true, store.DemoIMSDNN: false},
		"2":        {"ims": false, "internet": false},
	}
	if fmt.Sprint(defaults) != fmt.Sprint(want) {
		t.Fatalf("DNN infos %v, want %v", defaults, want)
	}
	if _, err := u.QuerySmfSelectData(ctx, "imsi-001010000000001", identity.PLMN{}); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}
