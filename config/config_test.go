package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestEmptyDocumentMeansDefaults(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.DemoSubscribers != Default().Store.DemoSubscribers {
		t.Fatalf("got %+v", c.Store)
	}
}

func TestParseOverlaysDefaults(t *testing.T) {
	c, err := Parse([]byte("log:\n  level: debug\namf:\n  timers:\n    t3560: 2s\nupf:\n  pdrTable: global\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.UPF.PDRTable != "global" || !c.UPF.Embedded {
		t.Errorf("upf = %+v", c.UPF)
	}
	if c.Log.Level != "debug" || c.Log.Format != "text" {
		t.Errorf("log = %+v", c.Log)
	}
	if c.AMF.Timers.T3560 != 2*time.Second {
		t.Errorf("t3560 = %v", c.AMF.Timers.T3560)
	}
	if len(c.AMF.GUAMIs) == 0 || len(c.AUSF.ServingPLMNs) == 0 {
		t.Error("defaults lost by a partial document")
	}
}

func TestRoundTrip(t *testing.T) {
	b, err := Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatalf("re-reading our own output: %v\n%s", err, b)
	}
	b2, _ := Marshal(c)
	if string(b) != string(b2) {
		t.Errorf("not a fixed point:\n%s\n---\n%s", b, b2)
	}
}

// Bad documents fail with a message that names the field.
func TestValidationNamesTheField(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"log:\n  level: loud\n", "log.level"},
		{"store:\n  demoSubscribers: -1\n", "store.demoSubscribers"},
		{"store:\n  driver: mysql\n", "store.driver: \"mysql\" is not sqlite or postgres"},
		{"store:\n  driver: postgres\n", "store.dsn"},
		{"store:\n  path: \"\"\n", "store.path"},
		{"amf:\n  tais:\n    - plmn: \"2089\"\n      tac: 1\n", "amf"},
		{"ausf:\n  servingPlmns: []\n", "servingPlmns"},
		{"udm:\n  homeNetworkKeys:\n    - id: 1\n      scheme: profileC\n      privateKey: \"00\"\n", "udm"},
		{"nssf:\n  plmn: \"00101\"\n", "nssf.plmn"},
		{"bogus: 1\n", "bogus"},
		{"amf:\n  nosuchfield: 1\n", "nosuchfield"},
		{"metrics:\n  address: \"9464\"\n", "metrics.address"},
		{"metrics:\n  address: \"127.0.0.1:http\"\n", "metrics.address"},
		{"upf:\n  metricsAddress: \"127.0.0.1:99999\"\n", "upf.metricsAddress"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if err == nil {
			t.Errorf("%q: accepted", c.doc)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q does not name %q", c.doc, err, c.want)
		}
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tern.yaml")
	os.WriteFile(p, []byte("store:\n  path: /tmp/x.db\n"), 0o644)
	c, err := Load(p)
	if err != nil || c.Store.Path != "/tmp/x.db" {
		t.Fatalf("%+v %v", c.Store, err)
	}
	if c.Store.Driver != "sqlite" || c.Store.Source() != "/tmp/x.db" {
		t.Fatalf("default driver: %+v", c.Store)
	}
	os.WriteFile(p, []byte("store:\n  driver: postgres\n  dsn: postgres://tern@db/tern\n"), 0o644)
	if c, err = Load(p); err != nil || c.Store.Source() != "postgres://tern@db/tern" {
		t.Fatalf("postgres: %+v %v", c.Store, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// The AMF's PLMN matches the AUSF's however either is written.
func TestCrossCheckNormalisesPLMNs(t *testing.T) {
	if _, err := Parse([]byte("ausf:\n  servingPlmns: [\"208-93\"]\n")); err != nil {
		t.Fatalf("208-93 vs the AMF's 20893: %v", err)
	}
	if _, err := Parse([]byte("ausf:\n  servingPlmns: [\"00101\"]\n")); err == nil || !strings.Contains(err.Error(), "amf.guamis[0].plmn") {
		t.Fatalf("AMF PLMN not served by the AUSF: %v", err)
	}
}

// The metrics addresses are off by default and taken when set, the port 0
// (any free port) included.
func TestMetricsAddresses(t *testing.T) {
	if d := Default(); d.Metrics.Address != "" || d.UPF.MetricsAddress != "" {
		t.Errorf("metrics on by default: %q, upf %q", d.Metrics.Address, d.UPF.MetricsAddress)
	}
	c, err := Parse([]byte("metrics:\n  address: 127.0.0.1:9464\nupf:\n  metricsAddress: \"[::1]:0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Metrics.Address != "127.0.0.1:9464" || c.UPF.MetricsAddress != "[::1]:0" {
		t.Errorf("parsed metrics %q, upf %q", c.Metrics.Address, c.UPF.MetricsAddress)
	}
}

// TestListItemsGetDefaults: a list in the document replaces the default
// list, and each of its items gets the per-item defaults (an omitted mtu
// was 0 and failed validation).
func TestListItemsGetDefaults(t *testing.T) {
	c, err := Parse([]byte("smf:\n  dnns:\n    - name: internet\n      snssai: 1-010203\n      pool: 10.60.0.0/16\n" +
		"    - name: ims\n      snssai: 1-010203\n      pool: 10.61.0.0/16\n      mtu: 1280\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.SMF.DNNs[0].MTU != 1400 || c.SMF.DNNs[1].MTU != 1280 {
		t.Errorf("dnns = %+v", c.SMF.DNNs)
	}
}

// TestRenamedKeys: the old spellings fail with the new key named; the new
// ones are taken.
func TestRenamedKeys(t *testing.T) {
	for old, now := range map[string]string{"amf:\n  instanceID: x\n": "amf.instanceId", "upf:\n  nodeID: 127.0.0.1\n": "upf.nodeId"} {
		if _, err := Parse([]byte(old)); err == nil || !strings.Contains(err.Error(), now) {
			t.Errorf("%q: %v, want an error naming %s", old, err, now)
		}
	}
	c, err := Parse([]byte("amf:\n  instanceId: 6f0c1f0e-0000-4000-8000-000000000001\nupf:\n  nodeId: 127.0.0.1\n"))
	if err != nil || c.AMF.InstanceID == "" || c.UPF.NodeID != "127.0.0.1" {
		t.Fatalf("%+v %v", c.AMF.InstanceID, err)
	}
}

// TestDNNPoolChangeNeedsBothKeys: the SMF allocates from smf.dnns[].pool
// and the embedded UPF routes upf.n6[].pool into the DNN's device; a pool
// changed in one place only is refused with both keys named.
func TestDNNPoolChangeNeedsBothKeys(t *testing.T) {
	_, err := Parse([]byte("smf:\n  dnns:\n    - {name: internet, snssai: 1-010203, pool: 10.80.0.0/16}\n    - {name: ims, snssai: 1-010203, pool: 10.61.0.0/16}\n"))
	if err == nil || !strings.Contains(err.Error(), "upf.n6[0].pool") || !strings.Contains(err.Error(), "smf.dnns[0].pool") {
		t.Fatalf("pool changed only at the SMF: %v", err)
	}
	c, err := Parse([]byte("smf:\n  dnns:\n    - {name: internet, snssai: 1-010203, pool: 10.80.0.0/16}\n    - {name: ims, snssai: 1-010203, pool: 10.61.0.0/16}\n" +
		"upf:\n  n6:\n    - {dnn: internet, pool: 10.80.0.0/16}\n    - {dnn: ims, pool: 10.61.0.0/16}\n"))
	if err != nil || c.UPF.N6[0].Pool != "10.80.0.0/16" {
		t.Fatalf("pool changed in both places: %v", err)
	}
}

// TestDocumentErrors: a misspelt key or a value of the wrong kind is named
// by its path from the document's root, with the key probably meant or
// what the value should look like, and no Go type names ("field n2Adress
// not found in type amf.Config", "cannot unmarshal !!str into uint32").
func TestDocumentErrors(t *testing.T) {
	cases := []struct {
		doc  string
		want []string
	}{
		{"amf:\n  n2Adress: 127.0.0.1:38412\n", []string{"line 2", "amf.n2Adress", "did you mean n2Address?"}},
		{"upf:\n  embeded: true\n", []string{"upf.embeded", "did you mean embedded?"}},       // a key of the section itself
		{"upf:\n  N3Addr: 127.0.0.1:2152\n", []string{"upf.N3Addr", "did you mean n3Addr?"}}, // inline upf.Config
		{"amf:\n  timers:\n    t3550: 5\n", []string{"line 3", "amf.timers.t3550", "write 5s"}},
		{"amf:\n  timers:\n    t3550: soon\n", []string{"amf.timers.t3550", `"soon" is not a duration`, "5s"}},
		{"amf:\n  tais:\n    - plmn: \"20893\"\n      tac: abc\n", []string{"line 4", "amf.tais[0].tac", "a whole number from 0 to 4294967295"}},
		{"amf:\n  tais:\n    - plmn: \"20893\"\n      tac: \"7\"\n", []string{"amf.tais[0].tac", "without quotes"}},
		{"amf:\n  guamis:\n    - plmn: \"20893\"\n      region: 300\n", []string{"amf.guamis[0].region", "out of range", "0 to 255"}},
		{"upf:\n  workers: many\n", []string{"upf.workers", "a whole number"}},
		{"upf:\n  noN6: maybe\n", []string{"upf.noN6", "true or false"}},
		{"upf:\n  n6:\n    dnn: internet\n", []string{"upf.n6", "want a list"}},
		{"sbi:\n  listen: [1]\n", []string{"sbi.listen", "want a mapping"}},
		{"amf: 3\n", []string{"amf", "want a mapping of keys (name, guamis,"}},
		{"stor:\n  path: x.db\n", []string{"stor", "did you mean store?"}},
		{"zzz: 1\n", []string{"zzz", "no such key (the keys here: log, store,"}},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if err == nil {
			t.Errorf("%q: accepted", c.doc)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.doc, err, w)
			}
		}
		for _, goName := range []string{"amf.Config", "uint32", "uint8", "time.Duration", "!!str", "!!int", "unmarshal"} {
			if strings.Contains(err.Error(), goName) {
				t.Errorf("%q: error %q names the Go type or YAML tag %q", c.doc, err, goName)
			}
		}
	}
}

// TestNearestKey: a misspelling (a letter left out, a case changed, two
// letters swapped) is matched to the key it is closest to; a word like no
// key is matched to none.
func TestNearestKey(t *testing.T) {
	keys := []string{"n2Address", "name", "guamis", "tais", "timers"}
	for word, want := range map[string]string{"n2Adress": "n2Address", "N2ADDRESS": "n2Address", "timer": "timers", "gumais": "guamis", "bogus": ""} {
		if got := nearest(word, keys); got != want {
			t.Errorf("nearest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestDocumentAnchorsAndMerges: anchors, aliases and merge keys (<<) are
// accepted, and what a merge brings in is checked where it lands.
func TestDocumentAnchorsAndMerges(t *testing.T) {
	c, err := Parse([]byte("smf:\n  dnns:\n    - &internet {name: internet, snssai: 1-010203, pool: 10.60.0.0/16, mtu: 1300}\n" +
		"    - <<: *internet\n      name: ims\n      pool: 10.61.0.0/16\n"))
	if err != nil || c.SMF.DNNs[1].MTU != 1300 || c.SMF.DNNs[1].Name != "ims" {
		t.Fatalf("merge key: %v %+v", err, c.SMF.DNNs)
	}
	_, err = Parse([]byte("smf:\n  dnns:\n    - &internet {name: internet, snssai: 1-010203, pool: 10.60.0.0/16}\n" +
		"    - <<: [{mtuu: 1300}]\n      name: ims\n      snssai: 1-010203\n      pool: 10.61.0.0/16\n"))
	if err == nil || !strings.Contains(err.Error(), "smf.dnns[1].mtuu") || !strings.Contains(err.Error(), "did you mean mtu?") {
		t.Fatalf("misspelt key brought in by a merge: %v", err)
	}
	// A merge into a map (sbi.listen), which the decoder takes: one
	// mapping or a list of them, and what it brings in is checked too.
	c, err = Parse([]byte("sbi:\n  listen:\n    <<: {nrf: \"10.0.0.1:8000\", amf: \"10.0.0.1:8001\"}\n    smf: \"10.0.0.1:8002\"\n"))
	if err != nil || c.SBI.Listen["nrf"] != "10.0.0.1:8000" || c.SBI.Listen["smf"] != "10.0.0.1:8002" {
		t.Fatalf("merge key in a map: %v %v", err, c.SBI.Listen)
	}
	c, err = Parse([]byte("sbi:\n  listen: {<<: [{nrf: \"10.0.0.1:8000\"}, {amf: \"10.0.0.1:8001\"}], smf: \"10.0.0.1:8002\"}\n"))
	if err != nil || c.SBI.Listen["amf"] != "10.0.0.1:8001" {
		t.Fatalf("merge key with a list in a map: %v %v", err, c.SBI.Listen)
	}
	_, err = Parse([]byte("sbi:\n  listen:\n    <<: {nrf: [10.0.0.1]}\n"))
	if err == nil || !strings.Contains(err.Error(), "sbi.listen.nrf: want a string") {
		t.Fatalf("a list brought into a map of strings: %v", err)
	}
}

// TestValuesOutsideTheirDomain: values that used to pass `tern config` and
// fail only at `tern up` (or never) are refused by key, and the same keys
// with sound values are taken.
func TestValuesOutsideTheirDomain(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"upf:\n  driver: dpdk\n", `upf.driver: "dpdk"`},
		{"amf:\n  n2Address: 127.0.0.1:99999\n", "amf.n2Address"},
		{"upf:\n  workers: -3\n", "upf.workers: -3"},
		{"upf:\n  pfcpAddr: 127.0.0.1\n", "upf.pfcpAddr"},
		{"upf:\n  nodeId: not a name\n", "upf.nodeId"},
		{"upf:\n  n3Iface: a-very-long-interface\n", "upf.n3Iface"},
		{"upf:\n  n6:\n    - {dnn: internet, pool: 10.60.0.0/16, mtu: 100}\n    - {dnn: ims, pool: 10.61.0.0/16}\n", "upf.n6[0].mtu"},
		{"upf:\n  shapingDelay: -1ms\n", "upf.shapingDelay"},
		{"smf:\n  upfs:\n    - {name: upf, n4: upf.example, n3: 127.0.0.1, dnns: [internet, ims]}\n", "smf.upfs[0].n4"},
		{"upf:\n  embedded: false\n", "smf.upfs[0].n4: direct"},
		{"store:\n  followInterval: -1s\n", "store.followInterval"},
		{"amf:\n  instanceId: amf-1\n", "amf.instanceId"},
		{"nrf:\n  instanceId: 6f0c1f0e-0000-4000-8000-00000000000\n", "nrf.instanceId"},
		{"sbi:\n  nrf: 127.0.0.1:29510\n", "sbi.nrf"},
		{"smf:\n  apiRoot: http://10.0.0.2:8000?x=1\n", "smf.apiRoot"},
		{"amf:\n  apiRoot: ftp://10.0.0.1\n", "amf.apiRoot"},
		{"amf:\n  sctp:\n    maxMissedHeartbeats: -1\n", "amf.sctp.maxMissedHeartbeats"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.doc, err, c.want)
		}
	}
	c, err := Parse([]byte("upf:\n  driver: portable\n  workers: 4\n  pfcpAddr: 127.0.0.1:8805\n  nodeId: upf-1.example.org\n  n3Iface: eth0\n" +
		"amf:\n  n2Address: 127.0.0.1:38412\n  instanceId: 6F0C1F0E-0000-4000-8000-000000000001\n  apiRoot: https://amf.example:8443\n" +
		"sbi:\n  nrf: http://10.0.0.1:8000/prefix\nstore:\n  followInterval: 200ms\n"))
	if err != nil || c.UPF.Workers != 4 || c.UPF.Driver != "portable" {
		t.Fatalf("sound values refused: %v", err)
	}
	// A UPF reached over PFCP instead of the embedded one.
	if _, err := Parse([]byte("upf:\n  embedded: false\nsmf:\n  upfs:\n    - {name: upf, n4: \"10.100.4.2:8805\", n3: 10.100.3.2, dnns: [internet, ims]}\n")); err != nil {
		t.Fatalf("remote UPF: %v", err)
	}
}

// TestAPIRootTrailingSlash: an apiRoot ending in / worked before the
// apiRoots were checked (the SBI clients trim it), so an upgrade must not
// refuse it: it is trimmed, and what the NFs are given has no slash.
func TestAPIRootTrailingSlash(t *testing.T) {
	c, err := Parse([]byte("sbi:\n  nrf: http://10.0.0.1:8000/\namf:\n  apiRoot: http://10.0.0.2:8000/\n" +
		"smf:\n  apiRoot: https://smf.example/prefix/\nnrf:\n  apiRoot: http://10.0.0.1:8000/\n"))
	if err != nil {
		t.Fatalf("apiRoots ending in /: %v", err)
	}
	if c.SBI.NRF != "http://10.0.0.1:8000" || c.AMF.APIRoot != "http://10.0.0.2:8000" ||
		c.SMF.APIRoot != "https://smf.example/prefix" || c.NRF.APIRoot != "http://10.0.0.1:8000" {
		t.Errorf("not trimmed: sbi.nrf %q, amf %q, smf %q, nrf %q", c.SBI.NRF, c.AMF.APIRoot, c.SMF.APIRoot, c.NRF.APIRoot)
	}
	// tern nf --nrf sets sbi.nrf after Parse: Validate takes it, and the
	// NRF's apiRoot comes out trimmed.
	c.SBI.NRF = "http://10.0.0.9:8000/"
	if err := c.Validate(); err != nil {
		t.Fatalf("--nrf ending in /: %v", err)
	}
	if got := c.SBI.NRFRoot(); got != "http://10.0.0.9:8000" {
		t.Errorf("NRFRoot = %q", got)
	}
}

// TestNFErrorsReadAsPaths: an NF's own check names the key by its path
// from the document's root, and tern config wraps that error as it is
// (errors.Unwrap gives it back), for every NF section.
func TestNFErrorsReadAsPaths(t *testing.T) {
	for doc, want := range map[string]string{
		"amf:\n  n2Address: 127.0.0.1:99999\n":                                            "config: amf.n2Address: ",
		"ausf:\n  servingPlmns: [\"x\"]\n":                                                "config: ausf.servingPlmns[0]: ",
		"udm:\n  homeNetworkKeys:\n    - {id: 1, scheme: profileC, privateKey: \"00\"}\n": "config: udm.homeNetworkKeys[0].scheme: ",
		"udr:\n  indLength: 17\n":                                                         "config: udr.indLength: ",
		"nssf:\n  tas:\n    - {tac: 0x1000000}\n":                                         "config: nssf.tas[0].tac: ",
		"nrf:\n  heartBeatTimer: 1500ms\n":                                                "config: nrf.heartBeatTimer: ",
		"smf:\n  n4Address: 10.0.0.300\n":                                                 "config: smf.n4Address: ",
		"pcf:\n  dnns:\n    - {dnn: \"\"}\n":                                              "config: pcf.dnns[0].dnn: ",
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q...", doc, err, want)
			continue
		}
		if inner := errors.Unwrap(err); inner == nil || "config: "+inner.Error() != err.Error() {
			t.Errorf("%q: %v does not wrap the NF's error as it is (unwraps to %v)", doc, err, inner)
		}
	}
}
