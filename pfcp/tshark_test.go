package pfcp

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/pcap"
)

// TestTsharkDissects has Wireshark's PFCP dissector, an independent decoder,
// read the node and session reports of path supervision and Error
// Indication handling, and checks the message types, the Remote GTP-U
// Peer and Remote F-TEID it sees, and that it flags nothing as malformed.
func TestTsharkDissects(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("needs tshark (make tools)")
	}
	msgs := []struct {
		m    Message
		seid uint64
		show string // what tshark's detail view must show of the report
	}{
		{&NodeReportRequest{NodeID: NodeID{IP: upfAddr}, ReportType: NodeReportUPFR, PathFailurePeers: []netip.Addr{gnbAddr}}, 0,
			"Remote GTP-U Peer : IPv4 " + gnbAddr.String()},
		{&NodeReportRequest{NodeID: NodeID{IP: upfAddr}, ReportType: NodeReportUPRR, PathRecoveryPeers: []netip.Addr{gnbAddr}}, 0,
			"User Plane Path Recovery Report (187)"},
		{&NodeReportResponse{NodeID: NodeID{IP: smfAddr}, Cause: CauseRequestAccepted}, 0, "Cause: Request accepted"},
		{&SessionReportRequest{ReportType: ReportERIR, ErrorIndicationReport: &ErrorIndicationReport{
			RemoteFTEIDs: []FTEID{{TEID: 0x1234, IPv4: gnbAddr}}}}, 0x77, "F-TEID : TEID: 0x00001234, IPv4 " + gnbAddr.String()},
	}
	path := filepath.Join(t.TempDir(), "pfcp.pcap")
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := netip.AddrPortFrom(upfAddr, Port), netip.AddrPortFrom(smfAddr, Port)
	for i, m := range msgs {
		b, err := Encode(m.m, uint32(i+1), m.seid)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteUDP(t0, src, dst, b)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=|",
		"-e", "pfcp.msg_type",
		"-e", "_ws.malformed", "-e", "_ws.expert.message").Output() // stderr warns about running as root
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(msgs) {
		t.Fatalf("tshark shows %d packets, want %d:\n%s", len(lines), len(msgs), out)
	}
	for i, l := range lines {
		f := strings.Split(l, "|")
		if len(f) != 3 {
			t.Fatalf("line %q", l)
		}
		if want := fmt.Sprint(msgs[i].m.MessageType()); f[0] != want {
			t.Errorf("message %d: tshark sees type %s, want %s", i, f[0], want)
		}
		if f[1] != "" || f[2] != "" {
			t.Errorf("message %d: tshark reports malformed=%q expert=%q", i, f[1], f[2])
		}
	}
	for i, m := range msgs {
		v, err := exec.Command(tshark, "-n", "-V", "-r", path, "-Y", fmt.Sprintf("frame.number == %d", i+1)).Output()
		if err != nil {
			t.Fatalf("tshark -V: %v\n%s", err, v)
		}
		if !strings.Contains(string(v), m.show) {
			t.Errorf("message %d: tshark's detail lacks %q:\n%s", i, m.show, v)
		}
	}
}
