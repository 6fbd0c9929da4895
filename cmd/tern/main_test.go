package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/store"
)

// TestMain runs tern itself, not the tests, when a test starts this binary
// with TERN_TEST_MAIN set: to run a command as its own process (under a
// signal, e.g.).
func TestMain(m *testing.M) {
	if os.Getenv("TERN_TEST_MAIN") != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestDemoInterruptReports: Ctrl-C on tern demo reports what ran, as tern
// sim does, and exits 1 saying it was interrupted (issue 37: it printed
// nothing). The demo runs as a process of its own (this binary, TestMain)
// and gets SIGINT once its first step is reported.
func TestDemoInterruptReports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a core")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// 40 steps of 16 UEs one at a time: long enough (half a second or more) that
	// the signal lands well before the end.
	steps := strings.Repeat("register,deregister,", 19) + "register,deregister"
	cmd := exec.CommandContext(ctx, os.Args[0], "demo", "--ues", "16", "--concurrency", "1", "--gnbs", "1", "--scenario", steps)
	cmd.Env = append(os.Environ(), "TERN_TEST_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	stepLines := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if strings.HasPrefix(strings.TrimSpace(line), "step ") {
			if stepLines++; stepLines == 1 {
				cmd.Process.Signal(os.Interrupt)
			}
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("tern demo after SIGINT: %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, out.String(), stderr.String())
	}
	if stepLines == 0 || stepLines >= 40 {
		t.Errorf("%d of 40 steps reported; want the run cut short after the first", stepLines)
	}
	for _, want := range []string{"Procedures", "registration", "core (AMF counters)", "total "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the interrupted demo's report lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr %q does not say the demo was interrupted", stderr.String())
	}
}

// TestDemo runs the README's demo command in-process, small: it fails if
// any procedure fails.
func TestDemo(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "demo.pcap")
	if err := runDemo([]string{"--ues", "4", "--gnbs", "2", "--capture", capture, "--ciphering", "NEA0",
		"--json", filepath.Join(t.TempDir(), "demo.json")}); err != nil {
		t.Fatalf("tern demo: %v", err)
	}
	if fi, err := os.Stat(capture); err != nil || fi.Size() < 1000 {
		t.Fatalf("capture: %v %v", fi, err)
	}
	// The demo's own capture, read by an independent decoder: NGAP and
	// NAS-5GS, no malformed packet (the compliance check).
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (make tools installs it); capture not decoded")
	}
	// The demo picks its N2 UDP port; SCTP's heuristic is not enabled by
	// default, so decode every outer UDP port of the capture as SCTP except
	// PFCP's (8805) and GTP-U's (2152), which tshark knows.
	ports, err := exec.Command(tshark, "-n", "-r", capture, "-T", "fields", "-E", "occurrence=f", "-e", "udp.dstport").Output()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-n", "-r", capture, "-o", "nas-5gs.null_decipher:TRUE"}
	seen := map[string]bool{}
	for _, p := range strings.Fields(string(ports)) {
		if !seen[p] && p != "2152" && p != "8805" {
			seen[p] = true
			args = append(args, "-d", "udp.port=="+p+",sctp")
		}
	}
	count := func(filter string) int {
		out, err := exec.Command(tshark, append(args, "-Y", filter)...).Output()
		if err != nil {
			t.Fatalf("tshark -Y %s: %v", filter, err)
		}
		return len(strings.Fields(strings.TrimSpace(string(out)))) // >0 iff any line
	}
	if n := count("_ws.malformed || _ws.expert.severity == error"); n != 0 {
		t.Errorf("tshark finds malformed or erroneous packets in the demo capture")
	}
	if count("ngap") == 0 || count("nas_5gs.mm.message_type == 0x43") == 0 {
		t.Errorf("demo capture does not decode as NGAP carrying readable NAS-5GS (Registration Complete under NEA0)")
	}
	// N4: PFCP association, session establishment, modification, deletion
	// (TS 29.244 message types 5, 50, 52, 54) and their responses.
	for _, mt := range []string{"5", "6", "50", "51", "52", "53", "54", "55"} {
		if count("pfcp.msg_type == "+mt) == 0 {
			t.Errorf("demo capture has no PFCP message type %s", mt)
		}
	}
	// N3: G-PDUs with the PDU session container (TS 38.415) in both
	// directions, carrying the pings (ICMP) and the transfer (UDP echo).
	if os.Geteuid() == 0 {
		for _, f := range []string{
			"gtp.message == 0xff && gtp.ext_hdr.pdu_ses_con.pdu_type == 1 && icmp", // UL PDU SESSION INFORMATION
			"gtp.message == 0xff && gtp.ext_hdr.pdu_ses_con.pdu_type == 0 && icmp", // DL PDU SESSION INFORMATION
			"gtp.ext_hdr.pdu_ses_con.qos_flow_id == 1 && udp.port == 7",
		} {
			if count(f) == 0 {
				t.Errorf("demo capture has no packet matching %s", f)
			}
		}
	}
}

func TestSubscriberCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "subs.db")
	add := []string{"add", "--store", db, "--imsi", "208930000000101", "--k", "8baf473f2f8fd09487cccbd7097c6862",
		"--opc", "8e27b6af0e692e750f32667a3b14605d", "--slice", "1-010203", "--slice", "2", "--dnn", "internet", "--dnn", "ims"}
	if err := runSubscriber(add); err != nil {
		t.Fatal(err)
	}
	if err := runSubscriber(add); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("adding twice: %v", err)
	}
	if err := runSubscriber([]string{"add", "--store", db, "--imsi", "208930000000102", "--k", "00"}); err == nil {
		t.Fatal("short K accepted")
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := st.Get("imsi-208930000000101")
	st.Close()
	if err != nil || len(sub.Slices) != 2 || len(sub.Slices[0].DNNs) != 2 || !sub.Slices[0].Default || sub.OPType != store.OPTypeOPc {
		t.Fatalf("stored %+v %v", sub, err)
	}
	if err := runSubscriber([]string{"list", "--store", db}); err != nil {
		t.Fatal(err)
	}
	if err := runSubscriber([]string{"delete", "--store", db, "--imsi", "208930000000101"}); err != nil {
		t.Fatal(err)
	}
	if err := runSubscriber([]string{"delete", "--store", db, "--imsi", "208930000000101"}); err == nil {
		t.Fatal("deleting a missing subscriber succeeded")
	}
}

// Every bad flag of subscriber add fails with a message that names it and
// says what it accepts.
func TestSubscriberAddValidatesFlags(t *testing.T) {
	db := filepath.Join(t.TempDir(), "subs.db")
	base := []string{"add", "--store", db, "--imsi", "208930000000101", "--k", "8baf473f2f8fd09487cccbd7097c6862"}
	opc := []string{"--opc", "8e27b6af0e692e750f32667a3b14605d"}
	cfg := filepath.Join(t.TempDir(), "tern.yaml")
	os.WriteFile(cfg, []byte(`smf:
  dnns:
    - {name: corp, snssai: 1-010203, pool: 10.70.0.0/16, mtu: 1400}
  upfs:
    - {name: upf, n4: direct, n3: 127.0.0.1, dnns: [corp]}
upf:
  n6:
    - {dnn: corp, tun: tern-corp, pool: 10.70.0.0/16}
`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--store", db, "--k", "00"}, "--imsi is required"},
		{[]string{"add", "--store", db, "--imsi", "12ab"}, "--imsi: \"12ab\" is not 6-15 digits"},
		{append([]string{"add", "--store", db, "--imsi", "208930000000101", "--k", "00"}, opc...), "--k: want 32 hex digits"},
		{base, "--opc or --op is required"},
		{append(base, "--opc", "zz"), "--opc: want 32 hex digits"},
		{append(base, "--op", "8e27"), "--op: want 32 hex digits"},
		{append(base, append(opc, "--op", "8e27b6af0e692e750f32667a3b14605d")...), "give one, not both"},
		{append(base, append(opc, "--amf", "80")...), "--amf: want 4 hex digits"},
		{append(base, append(opc, "--sqn", "281474976710656")...), "--sqn: 281474976710656 is above"},
		{append(base, append(opc, "--ambr-ul", "fast")...), "--ambr-ul: \"fast\" is not a bit rate"},
		{append(base, append(opc, "--ambr-dl", "10 Mbit/s")...), "--ambr-dl"},
		{append(base, append(opc, "--slice", "1-0102")...), "--slice: \"1-0102\""},
		{append(base, append(opc, "--dnn", "corp")...), "--dnn: \"corp\" is not served by the configuration (smf.dnns: internet, ims)"},
		{append(base, append(opc, "--config", cfg)...), "--dnn: \"internet\" is not served by the configuration (smf.dnns: corp)"},
		{append(base, append(opc, "extra")...), "unexpected argument \"extra\""},
	} {
		err := runSubscriber(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.args[2:], err, c.want)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("rejected adds created the store: %v", err)
	}
	// The DNN the configuration serves is accepted.
	if err := runSubscriber(append(base, append(opc, "--config", cfg, "--dnn", "corp")...)); err != nil {
		t.Fatal(err)
	}
}

// list, show and delete do not create a store that is not there.
func TestSubscriberCommandsNeedAStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "none.db")
	for _, args := range [][]string{
		{"list", "--store", db},
		{"show", "--store", db, "--imsi", "208930000000001"},
		{"delete", "--store", db, "--imsi", "208930000000001"},
	} {
		if err := runSubscriber(args); err == nil || !strings.Contains(err.Error(), "no subscriber store at "+db) {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("store created: %v", err)
	}
}

// The commands work on a store that a running core holds open, and the
// core sees their changes at once.
func TestSubscriberCommandsBesideRunningCore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "subs.db")
	core, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	if _, err := core.PutAll(store.DefaultSubscribers(2), false); err != nil {
		t.Fatal(err)
	}
	if _, err := core.IncrementSQN(store.DemoSUPI(1)); err != nil {
		t.Fatal(err)
	}
	add := []string{"add", "--store", db, "--imsi", "208930000000101", "--k", "8baf473f2f8fd09487cccbd7097c6862",
		"--opc", "8e27b6af0e692e750f32667a3b14605d"}
	if err := runSubscriber(add); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Get("imsi-208930000000101"); err != nil {
		t.Fatalf("core does not see the added subscriber: %v", err)
	}
	if err := runSubscriber([]string{"show", "--store", db, "--imsi", "208930000000001"}); err != nil {
		t.Fatal(err)
	}
	if err := runSubscriber([]string{"delete", "--store", db, "--imsi", "208930000000002"}); err != nil {
		t.Fatal(err)
	}
	if n, err := core.Len(); err != nil || n != 2 {
		t.Fatalf("core sees %d subscribers (%v), want 2", n, err)
	}
	if got, _ := core.Get(store.DemoSUPI(1)); got.SQN != 1 {
		t.Fatalf("SQN_HE %d after the CLI's changes, want 1", got.SQN)
	}
}

func TestSubscriberImport(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, "old.db")
	// A legacy log as the earlier store wrote it.
	line := `{"op":"put","sub":{"supi":"imsi-208930000000001","k":"8baf473f2f8fd09487cccbd7097c6862","op":"8e27b6af0e692e750f32667a3b14605d","opType":"OPc","amf":"8000","sqn":7,"ueAmbr":{"uplink":"1 Gbps","downlink":"2 Gbps"},"slices":[{"snssai":"1-010203","default":true,"dnns":[{"name":"internet","default":true,"sessionAmbr":{"uplink":"1 Gbps","downlink":"1 Gbps"},"5qi":9,"arpPriority":8}]}]}}`
	log := fmt.Sprintf("%08x %s\n", crc32.Checksum([]byte(line), crc32.MakeTable(crc32.Castagnoli)), line)
	os.WriteFile(legacy, []byte(log), 0o600)
	db := filepath.Join(dir, "new.db")
	if err := runSubscriber([]string{"import", "--store", db, "--from", legacy}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := st.Get(store.DemoSUPI(1))
	st.Close()
	if err != nil || sub.SQN != 7 {
		t.Fatalf("imported %+v, %v", sub, err)
	}
	if err := runSubscriber([]string{"import", "--store", db, "--from", db}); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Fatalf("importing a SQLite store as a legacy log: %v", err)
	}
	if err := runSubscriber([]string{"import", "--store", db}); err == nil || !strings.Contains(err.Error(), "--from is required") {
		t.Fatalf("no --from: %v", err)
	}
}

func TestConfigCommand(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, []byte("amf:\n  name: x\n  bogus: 1\n"), 0o644)
	if err := runConfig([]string{"--config", p}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bad config: %v", err)
	}
	if err := runConfig(nil); err != nil {
		t.Fatal(err)
	}
}

// TestRunExitStatus: help and version exit 0 (tern --help, tern COMMAND -h,
// also for the commands made of subcommands), a command line without a
// command 2, a failed command 1; the unknown-benchmark error lists them all.
func TestRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--help"}, 0}, {[]string{"-h"}, 0}, {[]string{"help"}, 0},
		{[]string{"--version"}, 0}, {[]string{"version"}, 0},
		{[]string{"config", "-h"}, 0}, {[]string{"sim", "-h"}, 0}, {[]string{"up", "--help"}, 0},
		{[]string{"bench", "-h"}, 0}, {[]string{"bench", "register", "-h"}, 0},
		{[]string{"lab", "-h"}, 0}, {[]string{"subscriber", "-h"}, 0},
		{nil, 2}, {[]string{"nope"}, 2},
		{[]string{"bench"}, 1}, {[]string{"lab"}, 1}, {[]string{"sim", "--nope"}, 1},
	} {
		var out, errs strings.Builder
		if got := run(tc.args, &out, &errs); got != tc.want {
			t.Errorf("tern %s: exit %d, want %d (stderr %q)", strings.Join(tc.args, " "), got, tc.want, errs.String())
		}
	}
	var out, errs strings.Builder
	run([]string{"bench", "nope"}, &out, &errs)
	for _, b := range []string{"register", "session", "pfcp", "upf", "classify", "paging", "handover", "restore", "failover"} {
		if !strings.Contains(errs.String(), b) {
			t.Errorf("tern bench nope does not list %s: %q", b, errs.String())
		}
	}
}

// TestVersionCommit: the commit set by -ldflags shows when the binary has
// no VCS stamp (test binaries never do).
func TestVersionCommit(t *testing.T) {
	defer func(c string) { commit = c }(commit)
	commit = "4d0efa3c1a2b"
	if v := version(); !strings.Contains(v, "commit 4d0efa3c1a2b") || !strings.HasPrefix(v, "tern ") {
		t.Errorf("version() = %q", v)
	}
}

// TestBadFlagValuesNamed: a numeric flag out of range is refused before
// anything starts, naming the flag and what it accepts (issue: values
// were silently replaced by defaults, or a small --size crashed the bench).
func TestBadFlagValuesNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--ues", "-1"}, "--ues: -1, want 0 or more"},
		{[]string{"sim", "--concurrency", "0"}, "--concurrency: 0, want 1 or more"},
		{[]string{"sim", "--tac", "16777216"}, "--tac: 16777216, want 0..16777215"},
		{[]string{"sim", "--timeout", "0s"}, "--timeout: 0s, want a positive duration"},
		{[]string{"bench", "restore", "--ues", "-5"}, "--ues: -5, want 1 or more"},
		{[]string{"bench", "restore", "--heartbeat", "-1s"}, "--heartbeat: -1s"},
		{[]string{"bench", "failover", "--gnbs", "1"}, "--gnbs: 1, want 2 or more"},
		{[]string{"bench", "failover", "--drills", "idle,nope"}, `unknown drill "nope"`},
		{[]string{"bench", "paging", "--size", "10"}, "--size: 10, want 20..1372"},
		{[]string{"bench", "handover", "--trials", "0"}, "--trials: 0, want 1 or more"},
		{[]string{"bench", "register", "--gnbs", "0"}, "--gnbs: 0, want 1 or more"},
		{[]string{"bench", "session", "--burst-rounds", "0"}, "--burst-rounds: 0"},
		{[]string{"bench", "pfcp", "--n", "0"}, "--n: 0, want 1 or more"},
		{[]string{"bench", "classify", "--passes", "0"}, "--passes: 0, want 1 or more"},
		{[]string{"up", "--udp-port", "70000"}, "--udp-port: 70000, want 0..65535"},
		{[]string{"demo", "--concurrency", "0"}, "--concurrency: 0, want 1 or more"},
	} {
		var out, errs strings.Builder
		if got := run(tc.args, &out, &errs); got != 1 || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("tern %s: exit %d, stderr %q; want 1 and %q", strings.Join(tc.args, " "), got, errs.String(), tc.want)
		}
	}
}
