package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/sim"
)

// TestCaptureDecodesInTshark records N2 of a registration/deregistration run
// with NEA0 (so NAS stays readable) and has tshark, an independent decoder,
// dissect it: SCTP over UDP carrying NGAP and NAS-5GS, no malformed packet,
// no dissector error.
func TestCaptureDecodesInTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (make tools installs it)")
	}
	pcapPath := filepath.Join(t.TempDir(), "n2.pcap")
	c := startCore(t, 4, func(cfg *config.Config) {
		cfg.Capture = pcapPath
		cfg.AMF.Security.Ciphering = []string{"NEA0"}
	})
	scfg := sim.DefaultConfig()
	scfg.AMFAddr, scfg.Transport = c.N2Addr(), c.transport()
	scfg.GNBs, scfg.UEs, scfg.Concurrency = 2, 4, 2
	scfg.Scenario = sim.Scenario{sim.StepRegister, sim.StepDeregister}
	res, err := sim.Run(context.Background(), scfg)
	if err != nil || res.Failures() != 0 {
		t.Fatalf("sim: %v, %d failures", err, res.Failures())
	}
	if err := c.Close(); err != nil { // flushes the capture
		t.Fatal(err)
	}
	// -d: SCTP over UDP on our port; null_decipher: dissect NEA0 "ciphered" NAS.
	args := []string{"-n", "-r", pcapPath, "-d", "udp.port==" + strconv.Itoa(c.cfg.AMF.SCTP.UDPPort) + ",sctp",
		"-o", "nas-5gs.null_decipher:TRUE"}
	count := func(filter string) int {
		t.Helper()
		cmd := exec.Command(tshark, append(args, "-Y", filter)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr // "running as root" and similar notes
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tshark -Y %q: %v\n%s", filter, err, stderr.String())
		}
		s := strings.TrimSpace(string(out))
		if s == "" {
			return 0
		}
		return len(strings.Split(s, "\n"))
	}
	if n := count("_ws.malformed || _ws.expert.severity == error"); n != 0 {
		out, _ := exec.Command(tshark, append(args, "-V", "-Y", "_ws.malformed || _ws.expert.severity == error")...).CombinedOutput()
		t.Fatalf("%d malformed or erroneous packets:\n%s", n, out)
	}
	// SCTP bundles chunks, so one frame may carry several NGAP/NAS messages
	// (two UEs' Authentication Responses, say): count field occurrences,
	// not frames.
	occurrences := func(field, value string) int {
		t.Helper()
		cmd := exec.Command(tshark, append(args, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", field)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tshark -e %s: %v", field, err)
		}
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			for _, v := range strings.Split(strings.TrimSpace(line), ",") {
				if v == value {
					n++
				}
			}
		}
		return n
	}
	if n := count("sctp.chunk_type == 1"); n < 2 {
		t.Errorf("SCTP INIT: %d packets, want at least 2", n)
	}
	if n := count("sctp.data_payload_proto_id == 60 && ngap"); n < 10 {
		t.Errorf("NGAP with PPID 60: %d packets, want at least 10", n)
	}
	checks := []struct {
		what         string
		field, value string
		min          int
	}{
		{"NG Setup", "ngap.procedureCode", "21", 4},
		{"Registration Request", "nas_5gs.mm.message_type", "0x41", 4},
		{"Authentication Response", "nas_5gs.mm.message_type", "0x57", 4},
		{"Security Mode Complete", "nas_5gs.mm.message_type", "0x5e", 4},
		{"Registration Complete (readable under NEA0)", "nas_5gs.mm.message_type", "0x43", 4},
		{"Deregistration Request", "nas_5gs.mm.message_type", "0x45", 4},
		{"Initial Context Setup", "ngap.procedureCode", "14", 8},
	}
	for _, ck := range checks {
		if n := occurrences(ck.field, ck.value); n < ck.min {
			t.Errorf("%s (%s == %s): %d messages, want at least %d", ck.what, ck.field, ck.value, n, ck.min)
		}
	}
}
