package udm

import (
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nf/udr"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
	"github.com/tern5g/tern/store"
)

var plmn = identity.PLMN{MCC: "208", MNC: "93"}

func newUDM(t *testing.T, cfg Config) (*UDM, *store.Store) {
	t.Helper()
	st, err := store.OpenOptions(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	subs := store.DefaultSubscribers(1)
	subs[0].GPSIs = []string{"msisdn-0900000001"}
	if _, err := st.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	r, err := udr.New(udr.Config{}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(cfg, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u, st
}

const ausfID = "6f1c0b0e-0000-4000-8000-000000000003"

func request() *models.Udm_UEAU_AuthenticationInfoRequest {
	return &models.Udm_UEAU_AuthenticationInfoRequest{ServingNetworkName: kdf.ServingNetworkName(plmn), AusfInstanceId: ausfID}
}

// registration is an AMF's Nudm_UECM registration with every mandatory
// member (TS 29.503 Amf3GppAccessRegistration).
func registration(amfID string) *models.Udm_UECM_Amf3GppAccessRegistration {
	return &models.Udm_UECM_Amf3GppAccessRegistration{AmfInstanceId: amfID, DeregCallbackUri: "http://amf.example/dereg",
		Guami: &models.Guami{PlmnId: &models.PlmnIdNid{Mcc: "208", Mnc: "93"}, AmfId: "cafe00"}, RatType: models.RatType_NR}
}

// Each vector uses a fresh SQN (TS 33.102 Annex C: SEQ+1, IND cycles) that
// the USIM accepts, and the vector's fields are consistent with the USIM's.
func TestGenerateAuthDataVectors(t *testing.T) {
	u, st := newUDM(t, Config{})
	supi := store.DemoSUPI(1)
	sub, _ := st.Get(supi)
	usim := &milenage.USIM{K: sub.K, OPc: sub.OP, AMF: sub.AMF}
	snn := kdf.ServingNetworkName(plmn)
	var last uint64
	for i := 0; i < 3; i++ {
		res, err := u.GenerateAuthData(context.Background(), supi, request())
		if err != nil {
			t.Fatal(err)
		}
		av := res.AuthenticationVector
		if res.Supi != supi || res.AuthType != models.Udm_UEAU_AuthType_5_G_AKA || av.AvType != models.Udm_UEAU_AvType_5_G_HE_AKA {
			t.Fatalf("result = %+v", res)
		}
		rnd, _ := hex.DecodeString(av.Rand)
		autn, _ := hex.DecodeString(av.Autn)
		if autn[6]&0x80 == 0 {
			t.Fatal("AMF separation bit not set in AUTN")
		}
		r, ck, ik, err := usim.Authenticate(rnd, autn)
		if err != nil {
			t.Fatalf("vector %d rejected by USIM: %v", i, err)
		}
		if got := hex.EncodeToString(kdf.RESStar(ck, ik, snn, rnd, r)); got != av.XresStar {
			t.Fatalf("XRES* %s != RES* %s", av.XresStar, got)
		}
		if got := hex.EncodeToString(kdf.KAUSF(ck, ik, snn, autn[:6])); got != av.Kausf {
			t.Fatalf("KAUSF differs")
		}
		if usim.SQN <= last {
			t.Fatalf("SQN did not increase: %d after %d", usim.SQN, last)
		}
		last = usim.SQN
	}
	if sub, _ := st.Get(supi); sub.SQN != last || last != 0x63 {
		t.Fatalf("stored SQN %#x, USIM %#x; want 0x63 after three vectors", sub.SQN, last)
	}
}

func TestGenerateAuthDataErrors(t *testing.T) {
	keyA, err := suci.GenerateHomeNetworkKey(1, suci.SchemeProfileA)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := newUDM(t, Config{HomeNetworkKeys: []HomeNetworkKey{{ID: 1, Scheme: "profileA", PrivateKey: hex.EncodeToString(keyA.Private)}}})
	ctx := context.Background()
	pubA, _ := keyA.Public()
	good, err := suci.Conceal(plmn, "0", "0000000001", suci.SchemeProfileA, 1, pubA)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := u.GenerateAuthData(ctx, good.String(), request()); err != nil || res.Supi != store.DemoSUPI(1) {
		t.Fatalf("profile A SUCI: %+v, %v", res, err)
	}
	tampered := good
	tampered.SchemeOutput = append([]byte(nil), good.SchemeOutput...)
	tampered.SchemeOutput[len(tampered.SchemeOutput)-1] ^= 1
	other, _ := suci.GenerateHomeNetworkKey(2, suci.SchemeProfileB)
	pubB, _ := other.Public()
	profB, _ := suci.Conceal(plmn, "0", "0000000001", suci.SchemeProfileB, 2, pubB)
	unknownKey, _ := suci.Conceal(plmn, "0", "0000000001", suci.SchemeProfileA, 7, pubA)

	for _, c := range []struct {
		name string
		id   string
		req  *models.Udm_UEAU_AuthenticationInfoRequest
		want *sbi.ProblemDetails
	}{
		{"no request", store.DemoSUPI(1), nil, sbi.ErrMandatoryIEMissing},
		{"no ausfInstanceId", store.DemoSUPI(1), &models.Udm_UEAU_AuthenticationInfoRequest{ServingNetworkName: kdf.ServingNetworkName(plmn)}, sbi.ErrMandatoryIEMissing},
		{"bad snn", store.DemoSUPI(1), &models.Udm_UEAU_AuthenticationInfoRequest{ServingNetworkName: "5G:foo", AusfInstanceId: ausfID}, sbi.ErrMandatoryIEIncorrect},
		{"bad supi", "imsi-12", request(), sbi.ErrMandatoryIEIncorrect},
		{"bad suci", "suci-0-208", request(), sbi.ErrMandatoryIEIncorrect},
		{"unknown supi", "imsi-208930000000077", request(), sbi.ErrUserNotFound},
		{"tampered suci", tampered.String(), request(), sbi.ErrAuthenticationRejected},
		{"unknown key id", unknownKey.String(), request(), sbi.ErrAuthenticationRejected},
		{"scheme without key", profB.String(), request(), &sbi.ProblemDetails{Cause: sbi.CauseUnsupportedProtectionScheme}},
		{"bad resync", store.DemoSUPI(1), &models.Udm_UEAU_AuthenticationInfoRequest{
			ServingNetworkName: kdf.ServingNetworkName(plmn), AusfInstanceId: ausfID,
			ResynchronizationInfo: &models.Udm_UEAU_ResynchronizationInfo{Rand: "00", Auts: "00"},
		}, sbi.ErrMandatoryIEIncorrect},
	} {
		_, err := u.GenerateAuthData(ctx, c.id, c.req)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %s", c.name, err, c.want.Cause)
		}
	}
}

func TestSDM(t *testing.T) {
	u, _ := newUDM(t, Config{})
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	am, err := u.GetAmData(ctx, supi, plmn)
	if err != nil {
		t.Fatal(err)
	}
	if len(am.Gpsis) != 1 || am.SubscribedUeAmbr.Uplink != "1 Gbps" || len(am.Nssai.DefaultSingleNssais) != 1 {
		t.Fatalf("am data = %+v", am)
	}
	nssai, err := u.GetNSSAI(ctx, supi, plmn)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := sbi.SubscribedFromNssai(nssai)
	if err != nil || len(subs) != 1 || !subs[0].Default || subs[0].SNSSAI != (identity.SNSSAI{SST: 1, SD: 0x010203}) {
		t.Fatalf("subscribed = %+v, %v", subs, err)
	}
	sm, err := u.GetSmData(ctx, supi, sbi.SmDataQuery{DNN: store.DemoDNN})
	if err != nil || len(sm) != 1 || sm[0].DnnConfigurations[store.DemoDNN].Var5gQosProfile.Var5qi != 9 {
		t.Fatalf("sm data = %+v, %v", sm, err)
	}
	if _, err := u.GetSmData(ctx, supi, sbi.SmDataQuery{DNN: "mms"}); !errors.Is(err, sbi.ErrDataNotFound) {
		t.Fatalf("unsubscribed dnn: %v", err)
	}
	sel, err := u.GetSmfSelectData(ctx, supi, plmn)
	if err != nil {
		t.Fatal(err)
	}
	info := sel.SubscribedSnssaiInfos["1-010203"]
	if len(sel.SubscribedSnssaiInfos) != 1 || len(info.DnnInfos) != 2 || info.DnnInfos[0].Dnn != store.DemoDNN ||
		!info.DnnInfos[0].DefaultDnnIndicator || info.DnnInfos[1].DefaultDnnIndicator {
		t.Fatalf("smf-select-data = %+v", sel)
	}
	if _, err := u.GetSmfSelectData(ctx, "imsi-208930000000077", plmn); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := u.GetAmData(ctx, "imsi-208930000000077", plmn); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestUECM(t *testing.T) {
	u, _ := newUDM(t, Config{})
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	if _, err := u.GetAMF3GPPAccess(ctx, supi); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("before registration: %v", err)
	}
	reg := registration("amf-1")
	if created, err := u.RegisterAMF3GPPAccess(ctx, supi, reg); err != nil || !created {
		t.Fatalf("first registration: created %v, %v", created, err)
	}
	reg.AmfInstanceId = "changed" // the UDM keeps its own copy
	got, err := u.GetAMF3GPPAccess(ctx, supi)
	if err != nil || got.AmfInstanceId != "amf-1" || got.Supi != supi || got.RegistrationTime == nil {
		t.Fatalf("registration = %+v, %v", got, err)
	}
	if created, err := u.RegisterAMF3GPPAccess(ctx, supi, registration("amf-2")); err != nil || created {
		t.Fatalf("registration replaced: created %v, %v", created, err)
	}
	if got, _ := u.GetAMF3GPPAccess(ctx, supi); got.AmfInstanceId != "amf-2" {
		t.Fatalf("serving AMF = %s, want amf-2", got.AmfInstanceId)
	}
	purge := &models.Udm_UECM_Amf3GppAccessRegistrationModification{Guami: reg.Guami, PurgeFlag: true}
	if err := u.UpdateAMF3GPPAccess(ctx, supi, purge); err != nil {
		t.Fatal(err)
	}
	if err := u.UpdateAMF3GPPAccess(ctx, supi, purge); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("second deregistration: %v", err)
	}
	if _, err := u.RegisterAMF3GPPAccess(ctx, supi, &models.Udm_UECM_Amf3GppAccessRegistration{}); !errors.Is(err, sbi.ErrMandatoryIEMissing) {
		t.Fatalf("no amfInstanceId: %v", err)
	}
	if _, err := u.RegisterAMF3GPPAccess(ctx, "imsi-208930000000077", registration("amf-1")); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := u.GetAMF3GPPAccess(ctx, "imsi-208930000000077"); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Errorf("a refused registration was left recorded: %v", err)
	}
}

// A subscriber deleted (by another process) while its UE registers: the
// registration is recorded before the check, so either the check refuses
// it or the deletion's notification finds it to deregister; a refused one
// leaves the previous registration as it was.
func TestUECMRegistrationOfADeletedSubscriber(t *testing.T) {
	u, st := newUDM(t, Config{})
	ctx := context.Background()
	supi := store.DemoSUPI(1)
	if _, err := u.RegisterAMF3GPPAccess(ctx, supi, registration("amf-1")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(supi); err != nil {
		t.Fatal(err)
	}
	if _, err := u.RegisterAMF3GPPAccess(ctx, supi, registration("amf-2")); !errors.Is(err, sbi.ErrUserNotFound) {
		t.Fatalf("registration of a deleted subscriber: %v", err)
	}
	if got, err := u.GetAMF3GPPAccess(ctx, supi); err != nil || got.AmfInstanceId != "amf-1" {
		t.Errorf("after the refusal: %+v %v, want amf-1's registration kept for the deletion to find", got, err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	if err := good.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	// The demo profile A key is free5GC's/UERANSIM's: check its public half.
	keys, _ := good.keys()
	pub, _ := keys[0].Public()
	if hex.EncodeToString(pub) != "5a8d38864820197c3394b92613b20b91633cbd897119273bf8e4a6f4eec0a650" {
		t.Fatalf("profile A demo public key = %x", pub)
	}
	key := good.HomeNetworkKeys[0].PrivateKey
	for _, c := range []struct {
		keys []HomeNetworkKey
		want string
	}{
		{[]HomeNetworkKey{{ID: 1, Scheme: "profileC", PrivateKey: key}}, "homeNetworkKeys[0].scheme"},
		{[]HomeNetworkKey{{ID: 1, Scheme: "profileA", PrivateKey: "abcd"}}, "homeNetworkKeys[0].privateKey"},
		{[]HomeNetworkKey{{ID: 1, Scheme: "profileA", PrivateKey: key}, {ID: 1, Scheme: "A", PrivateKey: key}}, "homeNetworkKeys[1].id"},
		{[]HomeNetworkKey{{ID: 1, Scheme: "profileB", PrivateKey: strings.Repeat("ff", 32)}}, "homeNetworkKeys[0].privateKey"},
	} {
		cfg := Config{HomeNetworkKeys: c.keys}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want error naming %s", c.keys, err, c.want)
		}
	}
}
