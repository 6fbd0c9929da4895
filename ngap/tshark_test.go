package ngap

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTsharkDissects has Wireshark's NGAP dissector, an independent
// decoder, read our PDU session messages (transfers included) and checks
// that it flags nothing as malformed.
func TestTsharkDissects(t *testing.T) {
	tshark, err1 := exec.LookPath("tshark")
	text2pcap, err2 := exec.LookPath("text2pcap")
	if err1 != nil || err2 != nil {
		t.Skip("needs tshark and text2pcap (apt-get install tshark)")
	}
	pc := ProcPDUSessionResourceSetup
	msgs := samplePDUSessionMessages(&CriticalityDiagnostics{ProcedureCode: &pc})
	var hex bytes.Buffer
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(b); off += 16 {
			fmt.Fprintf(&hex, "%06x", off)
			for _, c := range b[off:min(off+16, len(b))] {
				fmt.Fprintf(&hex, " %02x", c)
			}
			hex.WriteByte('\n')
		}
	}
	dir := t.TempDir()
	txt, pcap := filepath.Join(dir, "ngap.txt"), filepath.Join(dir, "ngap.pcap")
	if err := os.WriteFile(txt, hex.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// dummy IPv4/SCTP framing, PPID 60 = NGAP
	if out, err := exec.Command(text2pcap, "-q", "-S", "38412,38412,60", txt, pcap).CombinedOutput(); err != nil {
		t.Fatalf("text2pcap: %v\n%s", err, out)
	}
	out, err := exec.Command(tshark, "-n", "-r", pcap, "-T", "fields", "-E", "separator=|",
		"-e", "ngap.procedureCode", "-e", "_ws.malformed", "-e", "_ws.expert.message",
		"-e", "ngap.TransportLayerAddressIPv4", "-e", "ngap.gTP_TEID", "-e", "ngap.qosFlowIdentifier").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && l[0] >= '0' && l[0] <= '9' {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(msgs) {
		t.Fatalf("tshark shows %d packets, want %d:\n%s", len(lines), len(msgs), out)
	}
	var tunnels int
	for i, l := range lines {
		f := strings.Split(l, "|")
		if len(f) != 6 {
			t.Fatalf("line %q", l)
		}
		// the first procedure code is the message's; more come from
		// criticality diagnostics
		if pcs := strings.Split(f[0], ","); pcs[0] != fmt.Sprint(msgs[i].ProcedureCode()) {
			t.Errorf("%T: tshark sees procedure %q", msgs[i], f[0])
		}
		if f[1] != "" || f[2] != "" {
			t.Errorf("%T: tshark reports malformed=%q expert=%q", msgs[i], f[1], f[2])
		}
		if strings.Contains(f[3], "10.100.3.") {
			tunnels++
		}
	}
	// the first sample: Setup Request with setupReqT (IPv4 UPF tunnel, QFIs
	// 1 and 63) and setupReqMinT (IPv6 tunnel TEID 7, QFI 0)
	if f := strings.Split(lines[0], "|"); f[3] != "10.100.3.2" || f[4] != "00000001,00000007" || f[5] != "1,63,0" {
		t.Errorf("setup request transfers as tshark reads them: %q", lines[0])
	}
	if tunnels == 0 {
		t.Errorf("tshark decoded no GTP tunnel inside the transfers:\n%s", out)
	}
	t.Logf("tshark:\n%s", out)
}
