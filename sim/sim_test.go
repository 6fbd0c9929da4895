package sim

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/security/suci"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
)

func testConfig(c *testCore) Config {
	cfg := DefaultConfig()
	cfg.AMFAddr = "127.0.0.1:38412"
	cfg.Transport = c.cfg
	cfg.Timeout = 5 * time.Second
	return cfg
}

func run(t *testing.T, cfg Config) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func summary(t *testing.T, res *Result, proc string) (count, failures int) {
	t.Helper()
	for _, s := range res.Summaries {
		if s.Procedure == proc {
			if s.Count > 0 && (s.Median <= 0 || s.Max < s.P99 || s.P99 < s.P90 || s.P90 < s.Median) {
				t.Errorf("%s: inconsistent summary %+v", proc, s)
			}
			return s.Count, s.Failures
		}
	}
	return 0, 0
}

func TestRunFullScenario(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	cfg := testConfig(core)
	cfg.UEs, cfg.GNBs, cfg.Concurrency = 24, 2, 6
	cfg.Scenario, _ = ParseScenario("register,reregister,deregister,reregister,switchoff")
	var mu sync.Mutex
	told := map[string]int{}
	cfg.OnProcedure = func(proc string, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		if ok {
			told[proc]++
		}
	}
	res := run(t, cfg)
	for p, want := range map[string]int{ue.ProcRegistration: 24, ue.ProcDeregistration: 24,
		ue.ProcReregistration: 48, ue.ProcSwitchOff: 24, ue.ProcANRelease: 24} {
		if n, f := summary(t, res, p); n != want || f != 0 {
			t.Errorf("%s: %d ok, %d failed; want %d ok", p, n, f, want)
		}
		if told[p] != want {
			t.Errorf("OnProcedure told of %d %s, want %d", told[p], p, want)
		}
	}
	if res.Failures() != 0 || len(res.Steps) != 5 {
		t.Fatalf("failures %d steps %+v", res.Failures(), res.Steps)
	}
	gnbs := map[uint32]int{}
	for _, u := range res.UEs {
		if u.Err != "" || u.Registered || u.GUTI == "" {
			t.Errorf("UE %+v", u)
		}
		gnbs[u.GNB]++
	}
	if len(gnbs) != 2 || gnbs[1] != 12 {
		t.Errorf("UEs per gNB %v", gnbs)
	}
	if res.UEs[0].SUPI != "imsi-208930000000001" || res.UEs[23].SUPI != "imsi-208930000000024" {
		t.Errorf("SUPIs %s..%s", res.UEs[0].SUPI, res.UEs[23].SUPI)
	}
}

func TestRunSUCIProfiles(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	for _, scheme := range []suci.Scheme{suci.SchemeProfileA, suci.SchemeProfileB} {
		hn, err := suci.GenerateHomeNetworkKey(uint8(scheme), scheme)
		if err != nil {
			t.Fatal(err)
		}
		core.mu.Lock()
		core.hnKeys = append(core.hnKeys, hn)
		core.mu.Unlock()
		pub, _ := hn.Public()
		cfg := testConfig(core)
		cfg.UEs, cfg.Concurrency = 4, 4
		cfg.SUCIScheme, cfg.HNKeyID, cfg.HNPublicKey = scheme, hn.ID, pub
		cfg.GNBID = uint32(10 * scheme)
		res := run(t, cfg)
		if n, f := summary(t, res, ue.ProcRegistration); n != 4 || f != 0 {
			t.Errorf("%s: %d registered, %d failed: %+v", scheme, n, f, res.UEs)
		}
	}
}

func TestRunResync(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	cfg := testConfig(core)
	cfg.UEs, cfg.SQN = 3, 5000 // the USIMs are ahead of the network
	res := run(t, cfg)
	if n, f := summary(t, res, ue.ProcRegistration); n != 3 || f != 0 {
		t.Fatalf("%d registered, %d failed: %+v", n, f, res.UEs)
	}
}

func TestRunAuthenticationFailureCounted(t *testing.T) {
	d := DefaultConfig()
	otherK, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f")
	core := newTestCore(t, otherK, d.OPc) // the network has another key
	cfg := testConfig(core)
	cfg.UEs, cfg.Concurrency = 3, 3
	res := run(t, cfg)
	if n, f := summary(t, res, ue.ProcRegistration); n != 0 || f != 3 {
		t.Fatalf("%d registered, %d failed", n, f)
	}
	if n, f := summary(t, res, ue.ProcDeregistration); n != 0 || f != 0 {
		t.Fatalf("deregistration ran after failed registrations: %d/%d", n, f)
	}
	if res.Steps[1].Skipped != 3 {
		t.Fatalf("steps %+v", res.Steps)
	}
	for _, u := range res.UEs {
		if u.FailedStep != StepRegister || !strings.Contains(u.Err, "Authentication Reject") {
			t.Fatalf("outcome %+v", u)
		}
	}
}

func TestRunNGSetupFailure(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	cfg := testConfig(core)
	cfg.PLMN = identity.PLMN{MCC: "001", MNC: "01"}
	cfg.FirstIMSI = "001010000000001"
	_, err := Run(context.Background(), cfg)
	var sf *gnb.SetupFailureError
	if !errors.As(err, &sf) {
		t.Fatalf("err %v, want NG Setup Failure", err)
	}
}

func TestParseScenario(t *testing.T) {
	for in, want := range map[string]string{
		"register":                       "register",
		"register+deregister":            "register,deregister",
		"register+reregister":            "register,reregister,deregister",
		"register, switchoff":            "register,switchoff",
		"register,reregister,deregister": "register,reregister,deregister",
	} {
		sc, err := ParseScenario(in)
		if err != nil || sc.String() != want {
			t.Errorf("%q: %v %v, want %s", in, sc, err, want)
		}
	}
	if _, err := ParseScenario("register,attach"); err == nil {
		t.Error("unknown step accepted")
	}
}

func TestConfigValidation(t *testing.T) {
	bad := map[string]func(*Config){
		"gnbs":        func(c *Config) { c.GNBs = -1 },
		"imsi length": func(c *Config) { c.FirstIMSI = "20893" },
		"imsi plmn":   func(c *Config) { c.FirstIMSI = "001010000000001" },
		"k":           func(c *Config) { c.K = []byte{1} },
		"suci scheme": func(c *Config) { c.SUCIScheme = 3 },
		"tac":         func(c *Config) { c.TAC = 1 << 24 },
	}
	for name, mod := range bad {
		cfg := DefaultConfig()
		mod(&cfg)
		if err := cfg.withDefaults().validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := DefaultConfig().validate(); err != nil {
		t.Fatal(err)
	}
	if got := DefaultConfig().imsi(41); got != "208930000000042" {
		t.Fatalf("imsi(41) = %s", got)
	}
}
