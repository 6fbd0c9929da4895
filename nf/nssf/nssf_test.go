package nssf

import (
	"context"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

var (
	plmn   = identity.PLMN{MCC: "208", MNC: "93"}
	embb   = identity.SNSSAI{SST: 1, SD: 0x010203}
	urllc  = identity.SNSSAI{SST: 2, SD: identity.NoSD}
	miot   = identity.SNSSAI{SST: 3, SD: identity.NoSD}
	other  = identity.SNSSAI{SST: 1, SD: 0x112233}
	taAll  = identity.TAI{PLMN: plmn, TAC: 1}
	taEMBB = identity.TAI{PLMN: plmn, TAC: 2}
)

func newNSSF(t *testing.T) *NSSF {
	t.Helper()
	n, err := New(Config{
		PLMN:      "20893",
		Supported: []string{"1-010203", "2", "3"},
		TAs:       []TAConfig{{TAC: 2, Supported: []string{"1-010203"}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func allowed(t *testing.T, info *models.Nssf_NSSel_AuthorizedNetworkSliceInfo) []string {
	t.Helper()
	var out []string
	for _, a := range info.AllowedNssaiList {
		if a.AccessType != models.AccessType_3_GPP_ACCESS {
			t.Fatalf("access type %q", a.AccessType)
		}
		for _, s := range a.AllowedSnssaiList {
			v, err := sbi.SNSSAIFromModel(*s.AllowedSnssai)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v.String())
		}
	}
	return out
}

func models2str(l []models.Snssai) string {
	var out []string
	for _, m := range l {
		v, _ := sbi.SNSSAIFromModel(m)
		out = append(out, v.String())
	}
	return strings.Join(out, ",")
}

func TestSelectForRegistration(t *testing.T) {
	n := newNSSF(t)
	subscribed := []sbi.SubscribedSNSSAI{{SNSSAI: embb, Default: true}, {SNSSAI: urllc}, {SNSSAI: other}}
	cases := []struct {
		name           string
		requested      []identity.SNSSAI
		tai            identity.TAI
		want           string
		rejPLMN, rejTA string
	}{
		{"requested and subscribed", []identity.SNSSAI{urllc}, taAll, "2", "", ""},
		{"intersection", []identity.SNSSAI{embb, urllc, miot}, taAll, "1-010203,2", "3", ""},
		{"none requested: defaults", nil, taAll, "1-010203", "", ""},
		{"none allowed: defaults", []identity.SNSSAI{miot}, taAll, "1-010203", "3", ""},
		{"not in TA", []identity.SNSSAI{urllc}, taEMBB, "1-010203", "", "2"},
		{"subscribed but unsupported in PLMN", []identity.SNSSAI{other}, taAll, "1-010203", "1-112233", ""},
		{"duplicates", []identity.SNSSAI{urllc, urllc}, taAll, "2", "", ""},
	}
	for _, c := range cases {
		info, err := n.SelectForRegistration(context.Background(), "imsi-208930000000001", c.requested, subscribed, c.tai)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := strings.Join(allowed(t, info), ","); got != c.want {
			t.Errorf("%s: allowed %q, want %q", c.name, got, c.want)
		}
		if got := models2str(info.RejectedNssaiInPlmn); got != c.rejPLMN {
			t.Errorf("%s: rejected in PLMN %q, want %q", c.name, got, c.rejPLMN)
		}
		if got := models2str(info.RejectedNssaiInTa); got != c.rejTA {
			t.Errorf("%s: rejected in TA %q, want %q", c.name, got, c.rejTA)
		}
		if len(info.ConfiguredNssai) != 2 {
			t.Errorf("%s: configured NSSAI has %d entries, want 2 (1-010203, 2)", c.name, len(info.ConfiguredNssai))
		}
	}
}

func TestNothingAllowed(t *testing.T) {
	n := newNSSF(t)
	// Default slice not available in the TA and nothing else requested.
	info, err := n.SelectForRegistration(context.Background(), "imsi-208930000000001", nil,
		[]sbi.SubscribedSNSSAI{{SNSSAI: urllc, Default: true}}, taEMBB)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.AllowedNssaiList) != 0 {
		t.Fatalf("allowed %v, want none", allowed(t, info))
	}
	_, err = n.SelectForRegistration(context.Background(), "imsi-001010000000001", nil, nil, identity.TAI{PLMN: identity.PLMN{MCC: "001", MNC: "01"}, TAC: 1})
	if sbi.CauseOf(err) != sbi.CauseSNSSAINotSupported {
		t.Fatalf("foreign TAI: %v", err)
	}
}

func TestSubscribedFromNssai(t *testing.T) {
	subs, err := sbi.SubscribedFromNssai(&models.Udm_SDM_Nssai{
		DefaultSingleNssais: []models.Snssai{{Sst: 1, Sd: "010203"}},
		SingleNssais:        []models.Snssai{{Sst: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := newNSSF(t)
	info, err := n.SelectForRegistration(context.Background(), "imsi-208930000000001", nil, subs, taAll)
	if err != nil || strings.Join(allowed(t, info), ",") != "1-010203" {
		t.Fatalf("allowed %v, %v", allowed(t, info), err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{PLMN: "208", Supported: []string{"1"}}, "plmn"},
		{Config{PLMN: "20893", Supported: []string{"1-0102"}}, "supported[0]"},
		{Config{PLMN: "20893", Supported: []string{"1", "1"}}, "supported[1]"},
		{Config{PLMN: "20893", TAs: []TAConfig{{TAC: 1 << 24, Supported: []string{"1"}}}}, "tas[0].tac"},
		{Config{PLMN: "20893", TAs: []TAConfig{{TAC: 1, Supported: []string{"x"}}}}, "tas[0].supported[0]"},
		{Config{PLMN: "20893"}, "supported"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want error naming %s", c.cfg, err, c.want)
		}
	}
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
}
