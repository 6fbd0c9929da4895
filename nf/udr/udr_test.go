package udr

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/store"
)

func newUDR(t *testing.T, cfg Config) (*UDR, *store.Store) {
	t.Helper()
	st, err := store.OpenOptions(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
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
	if a.EncPermanentKey != "8baf473f2f8fd09487cccbd7097c6862" || a.EncOpcKey != "8e27b6af0e692e750f32667a3b14605d" ||
		a.AuthenticationManagementField != "8000" || a.SequenceNumber.Sqn != "000000000000" {
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
	sm, _ = u.QuerySmData(ctx, store.DemoSUPI(1), sbi.SmDataQuery{DNN: "ims"})
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
	if _, err := New(Config{}, nil, nil); err == nil {
		t.Fatal("nil store accepted")
	}
}
