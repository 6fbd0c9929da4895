package smf

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"
)

func TestIPPool(t *testing.T) {
	p, err := newIPPool(netip.MustParsePrefix("10.9.0.0/28"))
	if err != nil {
		t.Fatal(err)
	}
	if p.capacity() != 13 {
		t.Fatalf("capacity %d", p.capacity())
	}
	seen := map[netip.Addr]bool{}
	for i := 0; i < 13; i++ {
		a, ok := p.allocate()
		if !ok {
			t.Fatalf("allocation %d failed", i)
		}
		if seen[a] || a == netip.MustParseAddr("10.9.0.0") || a == netip.MustParseAddr("10.9.0.1") || a == netip.MustParseAddr("10.9.0.15") {
			t.Fatalf("bad or repeated address %v", a)
		}
		seen[a] = true
	}
	if _, ok := p.allocate(); ok {
		t.Fatal("allocation from a full pool")
	}
	if !p.release(netip.MustParseAddr("10.9.0.7")) || p.release(netip.MustParseAddr("10.9.0.7")) {
		t.Fatal("release / double release")
	}
	if p.release(netip.MustParseAddr("10.9.0.1")) || p.release(netip.MustParseAddr("10.8.0.7")) {
		t.Fatal("released a reserved or foreign address")
	}
	if a, ok := p.allocate(); !ok || a != netip.MustParseAddr("10.9.0.7") {
		t.Fatalf("reallocation %v %v", a, ok)
	}
	if p.allocated() != 13 {
		t.Fatalf("allocated %d", p.allocated())
	}
	// Next fit: a freed address is reused only after the others.
	big, _ := newIPPool(netip.MustParsePrefix("10.10.0.0/16"))
	a1, _ := big.allocate()
	a2, _ := big.allocate()
	big.release(a1)
	if a3, _ := big.allocate(); a3 == a1 || a3 == a2 {
		t.Fatalf("next fit reused %v", a3)
	}
	for _, bad := range []string{"10.0.0.0/31", "10.0.0.0/4"} {
		if _, err := newIPPool(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("pool %s accepted", bad)
		}
	}
}

func TestIPPoolFullCycle(t *testing.T) {
	p, _ := newIPPool(netip.MustParsePrefix("10.9.0.0/22"))
	var all []netip.Addr
	for {
		a, ok := p.allocate()
		if !ok {
			break
		}
		all = append(all, a)
	}
	if len(all) != p.capacity() {
		t.Fatalf("allocated %d of %d", len(all), p.capacity())
	}
	for _, a := range all {
		if !p.release(a) {
			t.Fatalf("release %v", a)
		}
	}
	if p.allocated() != 0 {
		t.Fatal("pool not empty")
	}
}

func TestKbps(t *testing.T) {
	if kbps(1) != 1 || kbps(1000) != 1 || kbps(1001) != 2 || kbps(0) != 0 {
		t.Error("kbps rounding")
	}
}

func TestPCO(t *testing.T) {
	dns := []netip.Addr{netip.MustParseAddr("1.2.3.4")}
	if b := buildPCOResponse(parsePCORequest(nil), dns, 1400); b != nil {
		t.Errorf("answer without a request: % x", b)
	}
	r := parsePCORequest([]byte{0x80, 0x00, 0x0D, 0x00, 0xC0, 0x23, 0x01, 0xFF})
	if !r.dns || r.mtu {
		t.Errorf("parse %+v", r)
	}
	// Truncated container: what was read before counts.
	if r := parsePCORequest([]byte{0x80, 0x00, 0x10, 0x00, 0x00, 0x0D, 0x05}); !r.mtu || r.dns {
		t.Errorf("truncated %+v", r)
	}
	got := buildPCOResponse(pcoRequest{dns: true}, dns, 1400)
	if string(got) != string([]byte{0x80, 0x00, 0x0D, 4, 1, 2, 3, 4}) {
		t.Errorf("answer % x", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := map[string]func(*Config){
		"dnns":             func(c *Config) { c.DNNs = nil },
		"snssai":           func(c *Config) { c.DNNs[0].SNSSAI = "x" },
		"pool":             func(c *Config) { c.DNNs[0].Pool = "10.60.0.1" },
		"overlaps":         func(c *Config) { c.DNNs[1].Pool = "10.60.128.0/17" },
		"listed twice":     func(c *Config) { c.DNNs[1].Name = c.DNNs[0].Name },
		"dns":              func(c *Config) { c.DNNs[0].DNS = []string{"::1"} },
		"mtu":              func(c *Config) { c.DNNs[0].MTU = 100 },
		"upfs":             func(c *Config) { c.UPFs = nil },
		"n3":               func(c *Config) { c.UPFs[0].N3 = "upf" },
		"not in smf.dnns":  func(c *Config) { c.UPFs[0].DNNs = append(c.UPFs[0].DNNs, "x") },
		"served by no UPF": func(c *Config) { c.UPFs[0].DNNs = c.UPFs[0].DNNs[:1] },
		"t3591":            func(c *Config) { c.Timers.T3591 = -1 },
		"n4Address":        func(c *Config) { c.N4Address = "host" },
		"restoration":      func(c *Config) { c.UPFs[0].Restoration = "resti-always" },
	}
	for want, mut := range cases {
		c := DefaultConfig()
		c.DNNs = append([]DNNConfig(nil), c.DNNs...)
		c.UPFs = append([]UPFConfig(nil), c.UPFs...)
		c.UPFs[0].DNNs = append([]string(nil), c.UPFs[0].DNNs...)
		mut(&c)
		err := c.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	c := Config{NodeID: "smf.example", DNNs: DefaultConfig().DNNs, UPFs: DefaultConfig().UPFs}.WithDefaults()
	if c.N4Address != "127.0.0.1" {
		t.Errorf("n4Address default for an FQDN node ID: %q", c.N4Address)
	}
}

func TestApplyDecision(t *testing.T) {
	arp := &models.Arp{PriorityLevel: 3}
	d := &models.Pcf_SMPolCtrl_SmPolicyDecision{SessRules: map[string]*models.Pcf_SMPolCtrl_SessionRule{"r": {
		AuthSessAmbr: &models.Ambr{Uplink: "10 Mbps", Downlink: "20 Mbps"},
		AuthDefQos:   &models.Pcf_SMPolCtrl_AuthorizedDefaultQos{Var5qi: 7, Arp: arp},
	}}}
	q, err := applyDecision(qos{}, d)
	if err != nil || q.ambr.UL != 10e6 || q.ambr.DL != 20e6 || q.fiveQI != 7 || q.arp.PriorityLevel != 3 {
		t.Fatalf("%+v %v", q, err)
	}
	// A partial decision keeps the rest.
	q2, err := applyDecision(q, &models.Pcf_SMPolCtrl_SmPolicyDecision{SessRules: map[string]*models.Pcf_SMPolCtrl_SessionRule{"r": {
		AuthDefQos: &models.Pcf_SMPolCtrl_AuthorizedDefaultQos{Var5qi: 8}}}})
	if err != nil || q2.fiveQI != 8 || q2.ambr != q.ambr {
		t.Fatalf("%+v %v", q2, err)
	}
	if _, err := applyDecision(qos{}, &models.Pcf_SMPolCtrl_SmPolicyDecision{}); err == nil {
		t.Error("empty decision accepted")
	}
	if _, err := applyDecision(q, &models.Pcf_SMPolCtrl_SmPolicyDecision{SessRules: map[string]*models.Pcf_SMPolCtrl_SessionRule{"r": {
		AuthSessAmbr: &models.Ambr{Uplink: "fast", Downlink: "1 Mbps"}}}}); err == nil {
		t.Error("bad AMBR accepted")
	}
}
