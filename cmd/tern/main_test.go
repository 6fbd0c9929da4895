package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/store"
)

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
	for _, b := range []string{"register", "session", "pfcp", "upf", "classify", "paging", "handover", "restore"} {
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
