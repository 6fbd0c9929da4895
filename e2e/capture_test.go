package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
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
	ts := newTshark(t, tshark, pcapPath, c.cfg.AMF.SCTP.UDPPort)
	ts.clean()
	count, occurrences := ts.count, ts.occurrences
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

// tsharkRun reads a capture of the core (N2 as SCTP over UDP on the
// AMF's port, NAS under NEA0) with tshark.
type tsharkRun struct {
	t      *testing.T
	tshark string
	args   []string
}

func newTshark(t *testing.T, tshark, pcapPath string, sctpUDPPort int) *tsharkRun {
	// -d: SCTP over UDP on our port; null_decipher: dissect NEA0 "ciphered" NAS.
	return &tsharkRun{t: t, tshark: tshark, args: []string{"-n", "-r", pcapPath, "-d", "udp.port==" + strconv.Itoa(sctpUDPPort) + ",sctp",
		"-o", "nas-5gs.null_decipher:TRUE"}}
}

// count returns the number of frames matching the display filter.
func (r *tsharkRun) count(filter string) int {
	r.t.Helper()
	cmd := exec.Command(r.tshark, append(r.args, "-Y", filter)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr // "running as root" and similar notes
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("tshark -Y %q: %v\n%s", filter, err, stderr.String())
	}
	s := strings.TrimSpace(string(out))
	if s == "" {
		return 0
	}
	return len(strings.Split(s, "\n"))
}

// clean fails the test if tshark finds a malformed packet or an error.
func (r *tsharkRun) clean() {
	r.t.Helper()
	if n := r.count("_ws.malformed || _ws.expert.severity == error"); n != 0 {
		out, _ := exec.Command(r.tshark, append(r.args, "-V", "-Y", "_ws.malformed || _ws.expert.severity == error")...).CombinedOutput()
		r.t.Fatalf("%d malformed or erroneous packets:\n%s", n, out)
	}
}

// occurrences counts the occurrences of field with value in the whole
// capture. SCTP bundles chunks, so one frame may carry several NGAP/NAS
// messages (two UEs' Authentication Responses, say): count field
// occurrences, not frames.
func (r *tsharkRun) occurrences(field, value string) int {
	r.t.Helper()
	cmd := exec.Command(r.tshark, append(r.args, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", field)...)
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("tshark -e %s: %v", field, err)
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

// TestCaptureMobilityDecodesInTshark records N2 and the gNBs' N3 of a run
// with idle mode (paging answered for injected downlink, a UE-triggered
// service request, a Service Reject), Xn and N2 handover (with forwarding)
// and a network-initiated deregistration, and has tshark dissect it all:
// no malformed packet, no dissector error, and every procedure there.
func TestCaptureMobilityDecodesInTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (make tools installs it)")
	}
	pcapPath := filepath.Join(t.TempDir(), "mobility.pcap")
	c := hoCore(t, 2, "forwarding", func(cfg *config.Config) {
		cfg.Capture = pcapPath
		cfg.AMF.Security.Ciphering = []string{"NEA0"}
	})
	ctx := context.Background()
	gcfg := gnb.Config{N3Tap: c.Capture(), HandoverInterruption: hoInterruption}
	g1 := dialHOGNB(t, c, 1, 1, gcfg)
	g2 := dialHOGNB(t, c, 2, 2, gcfg)
	gnb.Neighbours(g1.GNB, g2.GNB)
	a := newHOUE(t, c, g1.GNB, "0000000001")
	inject := downlinkInjector(c)
	sent := 0
	send := func(n int) {
		for range n {
			inject(a.s.Address, fmt.Appendf(nil, "dl-%d", sent))
			sent++
			time.Sleep(time.Millisecond)
		}
	}

	// Xn there, N2 back, downlink through both.
	send(5)
	if err := a.Handover(ctx, ue.HandoverXn, 2); err != nil {
		t.Fatal(err)
	}
	send(5)
	tr := startTraffic(c, a.s.Address, hoTrafficInterval)
	time.Sleep(10 * time.Millisecond)
	if err := a.Handover(ctx, ue.HandoverN2, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	tr.end()
	waitUntil(t, "the forwarded downlink", func() bool { return len(a.received()) >= sent })

	// Idle: paging for downlink, then a UE-triggered service request.
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the AMF to see the UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 0 })
	before := len(a.received())
	send(3)
	waitUntil(t, "the paged downlink", func() bool { return len(a.received()) >= before+3 })
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the AMF to see the UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 0 })
	if err := a.ServiceRequest(ctx, nas.ServiceData); err != nil {
		t.Fatal(err)
	}

	// Service Reject: a second UE deregistered by the network while idle.
	b := newUE(t, "0000000002", demoK, 0)
	b.Attach(g2.NewPort(b))
	if err := b.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the AMF to see the second UE idle", func() bool { return c.AMF.Stats().ConnectedUEs == 1 })
	if err := c.AMF.Deregister(ctx, b.SUPI(), 0, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the local deregistration", func() bool { return c.AMF.Stats().RegisteredUEs == 1 })
	var rej *ue.ServiceRejectError
	if err := b.ServiceRequest(ctx, nas.ServiceSignalling); !errors.As(err, &rej) {
		t.Fatalf("service request of a deregistered UE: %v", err)
	}
	waitUntil(t, "the second UE to register again", func() bool { return b.Registered() && c.AMF.Stats().RegisteredUEs == 2 })

	// Network-initiated deregistration of the connected first UE.
	if err := c.AMF.Deregister(ctx, a.SUPI(), 0, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the network deregistration", func() bool { return !a.Registered() && c.AMF.Stats().NetworkDeregistrations == 2 })

	g1.Close() // the gNBs' N3 taps write to the capture: stop them first
	g2.Close()
	if err := c.Close(); err != nil { // flushes the capture
		t.Fatal(err)
	}
	ts := newTshark(t, tshark, pcapPath, c.cfg.AMF.SCTP.UDPPort)
	ts.clean()
	for _, ck := range []struct {
		what   string
		filter string
		min    int
	}{
		{"Paging", "ngap.Paging_element", 1},
		{"Path Switch Request", "ngap.PathSwitchRequest_element", 1},
		{"Path Switch Request Acknowledge", "ngap.PathSwitchRequestAcknowledge_element", 1},
		{"Handover Required", "ngap.HandoverRequired_element", 1},
		{"Handover Request", "ngap.HandoverRequest_element", 1},
		{"Handover Request Acknowledge", "ngap.HandoverRequestAcknowledge_element", 1},
		{"Handover Command", "ngap.HandoverCommand_element", 1},
		{"Handover Notify", "ngap.HandoverNotify_element", 1},
		{"Uplink RAN Status Transfer", "ngap.UplinkRANStatusTransfer_element", 1},
		{"GTP-U End Marker on N3 (gNB tap)", "gtp.message == 254", 2},
		{"GTP-U G-PDU with a DL PDU Session Container on N3", "gtp.message == 255 && gtp.ext_hdr.pdu_ses_con.pdu_type == 0", 1},
	} {
		n := ts.count(ck.filter)
		if n < ck.min {
			t.Errorf("%s (%s): %d frames, want at least %d", ck.what, ck.filter, n, ck.min)
		}
		t.Logf("%s: %d frames", ck.what, n)
	}
	for _, ck := range []struct {
		what         string
		field, value string
		min          int
	}{
		{"Paging", "ngap.procedureCode", "24", 1},
		{"Path Switch Request", "ngap.procedureCode", "25", 2},
		{"Handover Preparation", "ngap.procedureCode", "12", 2},
		{"Handover Resource Allocation", "ngap.procedureCode", "13", 2},
		{"Handover Notification", "ngap.procedureCode", "11", 1},
		{"Service Request", "nas_5gs.mm.message_type", "0x4c", 3},
		{"Service Accept", "nas_5gs.mm.message_type", "0x4e", 2},
		{"Service Reject", "nas_5gs.mm.message_type", "0x4d", 1},
		{"Deregistration Request (UE terminated)", "nas_5gs.mm.message_type", "0x47", 1},
		{"Deregistration Accept (UE terminated)", "nas_5gs.mm.message_type", "0x48", 1},
		{"Registration Request (the mobility updates)", "nas_5gs.mm.message_type", "0x41", 5},
	} {
		n := ts.occurrences(ck.field, ck.value)
		if n < ck.min {
			t.Errorf("%s (%s == %s): %d messages, want at least %d", ck.what, ck.field, ck.value, n, ck.min)
		}
		t.Logf("%s: %d messages", ck.what, n)
	}
}
