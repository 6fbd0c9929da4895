package sbi

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
)

func TestProblemDetails(t *testing.T) {
	err := fmt.Errorf("ausf: %w", NewProblem(404, CauseUserNotFound, "imsi-%s", "001010000000001"))
	if !errors.Is(err, ErrUserNotFound) || errors.Is(err, ErrContextNotFound) {
		t.Fatalf("errors.Is mismatch for %v", err)
	}
	if CauseOf(err) != CauseUserNotFound || StatusOf(err) != 404 || StatusOf(nil) != 200 || StatusOf(errors.New("x")) != 500 {
		t.Fatalf("CauseOf/StatusOf wrong for %v", err)
	}
	if err.Error() != "ausf: 404 USER_NOT_FOUND: imsi-001010000000001" {
		t.Fatalf("Error() = %q", err.Error())
	}
	var p *ProblemDetails
	if !errors.As(err, &p) {
		t.Fatal("errors.As failed")
	}
	back := ProblemFromModel(p.Model())
	if !reflect.DeepEqual(back, p) || p.Model().Title != "Not Found" {
		t.Fatalf("model round trip: %+v", back)
	}
	// The parameters at fault travel as TS 29.571 invalidParams.
	miss := MissingIE("/servingNetworkName", "/ausfInstanceId")
	m := miss.Model()
	if m.Status != 400 || m.Cause != CauseMandatoryIEMissing || len(m.InvalidParams) != 2 || m.InvalidParams[1].Param != "/ausfInstanceId" {
		t.Fatalf("MissingIE model %+v", m)
	}
	if back := ProblemFromModel(m); !reflect.DeepEqual(back, miss) {
		t.Fatalf("round trip %+v, want %+v", back, miss)
	}
	if m := IncorrectIE("{supi}", "not %s", "an IMSI").Model(); m.Cause != CauseMandatoryIEIncorrect ||
		len(m.InvalidParams) != 1 || m.InvalidParams[0] != (models.InvalidParam{Param: "{supi}", Reason: "not an IMSI"}) {
		t.Fatalf("IncorrectIE model %+v", m)
	}
	// A different status with the same cause is a different problem.
	if errors.Is(NewProblem(500, CauseUserNotFound, ""), ErrUserNotFound) {
		t.Fatal("status ignored by Is")
	}
}

func TestSNSSAIConversion(t *testing.T) {
	for _, s := range []identity.SNSSAI{{SST: 1, SD: 0x010203}, {SST: 2, SD: identity.NoSD}, {SST: 255, SD: 0}} {
		m := SNSSAIToModel(s)
		back, err := SNSSAIFromModel(m)
		if err != nil || back != s {
			t.Errorf("%v -> %+v -> %v, %v", s, m, back, err)
		}
	}
	if m := SNSSAIToModel(identity.SNSSAI{SST: 1, SD: 0xabcdef}); m.Sd != "abcdef" {
		t.Errorf("sd = %q", m.Sd)
	}
	for _, m := range []models.Snssai{{Sst: 256}, {Sst: -1}, {Sst: 1, Sd: "12345"}, {Sst: 1, Sd: "zzzzzz"}} {
		if _, err := SNSSAIFromModel(m); err == nil {
			t.Errorf("%+v accepted", m)
		}
	}
	p, err := PLMNFromModel(PLMNToModel(identity.PLMN{MCC: "208", MNC: "093"}))
	if err != nil || p.MNC != "093" {
		t.Errorf("plmn round trip: %v, %v", p, err)
	}
}

func TestSubscribedFromNssai(t *testing.T) {
	got, err := SubscribedFromNssai(&models.Udm_SDM_Nssai{
		DefaultSingleNssais: []models.Snssai{{Sst: 1, Sd: "010203"}},
		SingleNssais:        []models.Snssai{{Sst: 2}},
	})
	want := []SubscribedSNSSAI{{SNSSAI: identity.SNSSAI{SST: 1, SD: 0x010203}, Default: true}, {SNSSAI: identity.SNSSAI{SST: 2, SD: identity.NoSD}}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, %v", got, err)
	}
	if _, err := SubscribedFromNssai(&models.Udm_SDM_Nssai{SingleNssais: []models.Snssai{{Sst: 1, Sd: "1"}}}); err == nil {
		t.Fatal("bad sd accepted")
	}
}

func TestAv5gAkaOf(t *testing.T) {
	av := models.Ausf_UEAU_Av5gAka{Rand: "00", Autn: "11", HxresStar: "22"}
	ctx := &models.Ausf_UEAU_UEAuthenticationCtx{AuthType: models.Ausf_UEAU_AuthType_5_G_AKA, Var5gAuthData: av}
	if got, err := Av5gAkaOf(ctx); err != nil || got != av {
		t.Fatalf("value: %+v, %v", got, err)
	}
	ctx.Var5gAuthData = &av
	if got, err := Av5gAkaOf(ctx); err != nil || got != av {
		t.Fatalf("pointer: %+v, %v", got, err)
	}
	// After the HTTP binding's JSON round trip the data is a generic map.
	raw, _ := json.Marshal(ctx)
	var decoded models.Ausf_UEAU_UEAuthenticationCtx
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	if got, err := Av5gAkaOf(&decoded); err != nil || got != av {
		t.Fatalf("json: %+v, %v", got, err)
	}
	decoded.Var5gAuthData = map[string]any{"rand": "00"}
	if _, err := Av5gAkaOf(&decoded); err == nil {
		t.Fatal("incomplete map accepted")
	}
	ctx.AuthType = models.Ausf_UEAU_AuthType_EAP_AKA_PRIME
	if _, err := Av5gAkaOf(ctx); err == nil {
		t.Fatal("EAP-AKA' accepted")
	}
	if _, err := Av5gAkaOf(nil); err == nil {
		t.Fatal("nil accepted")
	}
}

func TestOAuth2Error(t *testing.T) {
	err := fmt.Errorf("nrf: %w", NewOAuth2Error(400, OAuth2InvalidScope, "no %s", "UDM"))
	if !errors.Is(err, ErrInvalidScope) || errors.Is(err, ErrInvalidClient) || StatusOf(err) != 400 {
		t.Fatalf("errors.Is/StatusOf wrong for %v", err)
	}
	var o *OAuth2Error
	if !errors.As(err, &o) || o.Error() != "400 invalid_scope: no UDM" {
		t.Fatalf("errors.As: %v", err)
	}
	if back := OAuth2ErrorFromModel(400, o.Model()); *back != *o {
		t.Fatalf("model round trip: %+v", back)
	}
}

// TestCheckAmf3GppAccessRegistration: TS 29.503 Amf3GppAccessRegistration's
// required members, each absent one named, in the order of the data type.
func TestCheckAmf3GppAccessRegistration(t *testing.T) {
	full := models.Udm_UECM_Amf3GppAccessRegistration{AmfInstanceId: "6f1c0b0e-0000-4000-8000-000000000001",
		DeregCallbackUri: "http://amf.example/dereg", Guami: &models.Guami{AmfId: "cafe00"}, RatType: models.RatType_NR}
	noGuami := full
	noGuami.Guami, noGuami.RatType = nil, ""
	for _, c := range []struct {
		name string
		reg  *models.Udm_UECM_Amf3GppAccessRegistration
		want []string
	}{
		{"complete", &full, nil},
		{"nil", nil, []string{"/amfInstanceId", "/deregCallbackUri", "/guami", "/ratType"}},
		{"no guami nor ratType", &noGuami, []string{"/guami", "/ratType"}},
	} {
		err := CheckAmf3GppAccessRegistration(c.reg)
		var got []string
		var p *ProblemDetails
		if errors.As(err, &p) {
			if p.Status != 400 || p.Cause != CauseMandatoryIEMissing {
				t.Errorf("%s: %v", c.name, err)
			}
			for _, ip := range p.InvalidParams {
				got = append(got, ip.Param)
			}
		} else if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: invalidParams %q, want %q", c.name, got, c.want)
		}
	}
}
