package metrics_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/metrics"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/sim/usim"
	"github.com/tern5g/tern/upf"
)

var (
	plmn   = identity.PLMN{MCC: "208", MNC: "93"}
	slices = []identity.SNSSAI{{SST: 1, SD: 0x010203}}
)

// startCore runs a core unit with its own store, an ephemeral N2 port and
// an embedded UPF without N6, as the e2e tests do; mutate adjusts the
// configuration first.
func startCore(t *testing.T, subscribers int, mutate func(*config.Config)) (*core.Core, config.Config) {
	t.Helper()
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(t.TempDir(), "subscribers.db")
	cfg.Store.DemoSubscribers = subscribers
	cfg.AMF.SCTP.Transport = sctp.TransportUDP
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.AMF.SCTP.UDPPort = port
	cfg.UPF.N3Addr = "127.0.0.1:0"
	cfg.UPF.NoN6 = true
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := core.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, cfg
}

func serve(t *testing.T, srv *metrics.Server, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("metrics server close: %v", err)
		}
	})
	return "http://" + srv.Addr()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// waitStatus polls url until it answers want.
func waitStatus(t *testing.T, url string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, body := get(t, url)
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %q after %v, want %d", url, code, body, within, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scrape reads /metrics over HTTP and parses the exposition.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value is the value of family name's series with exactly these labels
// (name=value pairs), and false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			found := false
			for i := 0; i < len(labels); i += 2 {
				if labels[i] == l.GetName() && labels[i+1] == l.GetValue() {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// scrapeUntil scrapes until the series has value v (for a few seconds) and
// returns that scrape.
func scrapeUntil(t *testing.T, base string, v float64, name string, labels ...string) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fams := scrape(t, base)
		if got, _ := value(fams, name, labels...); got == v || time.Now().After(deadline) {
			return fams
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func want(t *testing.T, fams map[string]*dto.MetricFamily, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := value(fams, name, labels...)
	if !ok {
		t.Errorf("%s%v: no series", name, labels)
	} else if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

func newUE(t *testing.T, msin string) *ue.UE {
	t.Helper()
	k, _ := hex.DecodeString("8baf473f2f8fd09487cccbd7097c6862")
	op, _ := hex.DecodeString("8e27b6af0e692e750f32667a3b14605d")
	card, err := usim.New(usim.Subscriber{PLMN: plmn, MSIN: msin, K: k, OPc: op, AMF: []byte{0x80, 0}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ue.New(ue.Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: slices, EA: 0xF0, IA: 0xF0, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCoreMetrics scrapes a running core unit over HTTP: every family is
// there from the start, and the UE, session and procedure metrics follow
// two UEs that register, open a PDU session each, and one of which
// deregisters.
func TestCoreMetrics(t *testing.T) {
	c, cfg := startCore(t, 2, nil)
	srv, err := metrics.ServeCore("127.0.0.1:0", c, nil)
	base := serve(t, srv, err)

	if code, body := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	waitStatus(t, base+"/readyz", http.StatusOK, 5*time.Second)

	fams := scrape(t, base)
	for _, name := range []string{
		"tern_amf_registered_ues", "tern_amf_connected_ues", "tern_amf_idle_ues", "tern_amf_registrations_total",
		"tern_amf_service_requests_total", "tern_amf_pagings_total", "tern_amf_handovers_total", "tern_amf_ng_resets_total",
		"tern_smf_sm_contexts", "tern_smf_pdu_sessions_established_total", "tern_smf_n4_failures_total", "tern_smf_upf_state",
		"tern_smf_sessions_restored_total", "tern_smf_uplinks_moved_total", "tern_smf_establishments_waiting",
		"tern_smf_n4_deletions_pending", "tern_upf_pfcp_sessions_restored_total", "tern_upf_forwarded_packets_total", "tern_upf_packets_total", "tern_upf_drops_total",
		"tern_upf_buffered_packets", "tern_upf_rules", "tern_store_subscribers", "tern_procedure_duration_seconds",
		"go_goroutines",
	} {
		if fams[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	want(t, fams, 0, "tern_amf_registered_ues")
	want(t, fams, 2, "tern_store_subscribers")
	want(t, fams, 1, "tern_smf_upf_state", "upf", cfg.UPF.Name, "state", "up")
	want(t, fams, 0, "tern_upf_drops_total", "reason", "unknown-teid")
	want(t, fams, 0, "tern_procedure_duration_seconds", "procedure", "registration", "outcome", "success")

	ctx := context.Background()
	g, err := gnb.Dial(ctx, gnb.Config{AMFAddr: c.N2Addr(), Transport: sctp.Config{Transport: sctp.TransportUDP, UDPPort: cfg.AMF.SCTP.UDPPort},
		GNBID: 1, PLMN: plmn, TAC: 1, Slices: slices})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var ues []*ue.UE
	for i := range 2 {
		u := newUE(t, fmt.Sprintf("%010d", i+1))
		u.Attach(g.NewPort(u))
		if err := u.Register(ctx); err != nil {
			t.Fatalf("registration: %v", err)
		}
		if _, err := u.EstablishSession(ctx, ue.SessionRequest{}); err != nil {
			t.Fatalf("session: %v", err)
		}
		ues = append(ues, u)
	}
	// The SMF counts an establishment when the gNB has answered the N2
	// setup, after the UE has its accept.
	fams = scrapeUntil(t, base, 2, "tern_smf_pdu_sessions_established_total")
	want(t, fams, 2, "tern_amf_registered_ues")
	want(t, fams, 2, "tern_amf_connected_ues")
	want(t, fams, 0, "tern_amf_idle_ues")
	want(t, fams, 2, "tern_amf_registrations_total")
	want(t, fams, 2, "tern_amf_pdu_sessions")
	want(t, fams, 2, "tern_smf_sm_contexts")
	want(t, fams, 2, "tern_smf_pdu_sessions_established_total")
	want(t, fams, 2, "tern_upf_pfcp_sessions")
	want(t, fams, 2, "tern_procedure_duration_seconds", "procedure", "registration", "outcome", "success")
	want(t, fams, 2, "tern_procedure_duration_seconds", "procedure", "pdu_session_establishment", "outcome", "success")
	if n, _ := value(fams, "tern_upf_rules", "type", "pdr"); n < 2 {
		t.Errorf("tern_upf_rules{type=pdr} = %v with two sessions", n)
	}

	if err := ues[0].Deregister(ctx, false); err != nil {
		t.Fatal(err)
	}
	// The SM contexts' release finishes after the UE has its accept.
	fams = scrapeUntil(t, base, 1, "tern_smf_sm_contexts")
	want(t, fams, 1, "tern_amf_registered_ues")
	want(t, fams, 1, "tern_amf_deregistrations_total")
	want(t, fams, 1, "tern_procedure_duration_seconds", "procedure", "deregistration", "outcome", "success")
	want(t, fams, 1, "tern_smf_sm_contexts")
}

// TestReadinessFollowsTheUPF: a core whose only UPF is remote is alive but
// not ready until that UPF associates; the UPF's own server (tern nf upf)
// is ready once its PFCP endpoint serves, and counts the association.
func TestReadinessFollowsTheUPF(t *testing.T) {
	// PFCP on the well-known port of addresses of their own in 127/8, as
	// the e2e tests do: parallel test binaries do not collide.
	n4, upfAddr := freeport.Loopback(), freeport.Loopback()
	ucfg := upf.DefaultConfig()
	ucfg.PFCPAddr = netip.AddrPortFrom(upfAddr, pfcp.Port).String()
	ucfg.N3Addr = netip.AddrPortFrom(upfAddr, gtpu.Port).String()
	ucfg.NoN6 = true
	c, _ := startCore(t, 1, func(cfg *config.Config) {
		cfg.UPF.Embedded = false
		cfg.SMF.NodeID = n4.String()
		cfg.SMF.N4Address = n4.String()
		cfg.SMF.UPFs = []smf.UPFConfig{{Name: "upf", N4: ucfg.PFCPAddr, N3: upfAddr.String(), DNNs: []string{"internet", "ims"}}}
		cfg.SMF.Timers.Heartbeat = 200 * time.Millisecond
		cfg.SMF.Timers.HeartbeatTimeout = 100 * time.Millisecond
	})
	srv, err := metrics.ServeCore("127.0.0.1:0", c, nil)
	coreURL := serve(t, srv, err)
	if code, _ := get(t, coreURL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of a core without UPF: %d, want 200 (alive)", code)
	}
	code, body := get(t, coreURL+"/readyz")
	if code != http.StatusServiceUnavailable || body != "not ready: no UPF associated (upf down)\n" {
		t.Errorf("/readyz without UPF: %d %q, want 503 naming the UPF and its state", code, body)
	}

	u, err := core.NewUPF(ucfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	usrv, err := metrics.ServeUPF("127.0.0.1:0", u, nil)
	upfURL := serve(t, usrv, err)
	if code, _ := get(t, upfURL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a UPF not started: %d, want 503", code)
	}
	if err := u.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	waitStatus(t, upfURL+"/readyz", http.StatusOK, 5*time.Second)
	// The SMF asks a UPF that is down to associate every second.
	waitStatus(t, coreURL+"/readyz", http.StatusOK, 5*time.Second)

	fams := scrape(t, upfURL)
	want(t, fams, 1, "tern_upf_pfcp_associations")
	if n, _ := value(fams, "tern_pfcp_messages_received_total", "endpoint", "upf"); n < 1 {
		t.Errorf("UPF PFCP endpoint received %v messages after an association", n)
	}
	if fams["tern_amf_registered_ues"] != nil {
		t.Error("the UPF's process exposes AMF metrics")
	}
	fams = scrape(t, coreURL)
	want(t, fams, 1, "tern_smf_upf_state", "upf", "upf", "state", "up")
	if n, _ := value(fams, "tern_pfcp_messages_sent_total", "endpoint", "smf"); n < 1 {
		t.Errorf("SMF PFCP endpoint sent %v messages after an association", n)
	}
}

// TestLint runs the client library's linter over every family a core unit
// with an embedded UPF exposes: names, units and HELP follow the
// Prometheus conventions.
func TestLint(t *testing.T) {
	c, _ := startCore(t, 1, nil)
	r := prometheus.NewRegistry()
	if err := metrics.RegisterCore(r, c); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestProceduresRecord: each procedure and outcome lands in its own
// series, including a name the table does not know yet.
func TestProceduresRecord(t *testing.T) {
	p := metrics.NewProcedures()
	p.Procedure("registration", "success", 2*time.Millisecond)
	p.Procedure("registration", "rejected", time.Millisecond)
	p.Procedure("registration", "success", 3*time.Millisecond)
	p.Procedure("something_new", "success", time.Millisecond)
	r := prometheus.NewRegistry()
	r.MustRegister(p)
	fams, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	want(t, byName, 2, "tern_procedure_duration_seconds", "procedure", "registration", "outcome", "success")
	want(t, byName, 1, "tern_procedure_duration_seconds", "procedure", "registration", "outcome", "rejected")
	want(t, byName, 1, "tern_procedure_duration_seconds", "procedure", "something_new", "outcome", "success")
	want(t, byName, 0, "tern_procedure_duration_seconds", "procedure", "paging", "outcome", "failure")
}

// TestDashboardNamesExist: every tern metric the Grafana dashboard queries
// is exposed by a core unit (whose embedded UPF here also has a PFCP
// endpoint, so that both endpoints' families exist), so that a renamed
// family cannot leave a panel empty unnoticed.
func TestDashboardNamesExist(t *testing.T) {
	b, err := os.ReadFile("../deploy/grafana/tern.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	upfPort, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := startCore(t, 1, func(cfg *config.Config) {
		upfN4 := fmt.Sprintf("127.0.0.1:%d", upfPort)
		cfg.SMF.N4Address = freeport.Loopback().String()
		cfg.UPF.PFCPAddr = upfN4
		cfg.SMF.UPFs[0].N4 = upfN4
	})
	r := metrics.NewRegistry()
	if err := metrics.RegisterCore(r, c); err != nil {
		t.Fatal(err)
	}
	fams, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	name := regexp.MustCompile(`\b(tern|process|go)_[a-z0-9_]+`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				n++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
				if !have[m] && !have[base] {
					t.Errorf("dashboard queries %s, which no family provides", m)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d metric references found in the dashboard", n)
	}
}

// The SBI histogram has a series per operation and status answered.
func TestSBIHistogram(t *testing.T) {
	s := metrics.NewSBI()
	s.Observe(ops.SMFCreateSMContext, 201, 80*time.Microsecond)
	s.Observe(ops.SMFCreateSMContext, 403, time.Millisecond)
	s.Observe(ops.UDMGetAmData, 200, 50*time.Microsecond)
	r := prometheus.NewRegistry()
	r.MustRegister(s)
	got, err := testutil.GatherAndCount(r, "tern_sbi_server_duration_seconds")
	if err != nil || got != 3 {
		t.Errorf("%d series, %v; want 3", got, err)
	}
}
