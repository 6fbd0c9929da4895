package ngap

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tsharkDissect has Wireshark's NGAP dissector, an independent decoder, read
// msgs (one dummy SCTP packet each) and returns, per packet, the values of
// fields, occurrences joined by ",". It skips the test without tshark.
func tsharkDissect(t *testing.T, msgs []Message, fields ...string) [][]string {
	t.Helper()
	tshark, err1 := exec.LookPath("tshark")
	text2pcap, err2 := exec.LookPath("text2pcap")
	if err1 != nil || err2 != nil {
		t.Skip("needs tshark and text2pcap (apt-get install tshark)")
	}
	var hex bytes.Buffer
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
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
	args := []string{"-n", "-r", pcap, "-T", "fields", "-E", "separator=|", "-E", "aggregator=,"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(tshark, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	var pkts [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// tshark may print warnings (running as root) among the packets
		if l == "" || l[0] < '0' || l[0] > '9' {
			continue
		}
		f := strings.Split(l, "|")
		if len(f) != len(fields) {
			t.Fatalf("tshark line %q: %d fields, want %d", l, len(f), len(fields))
		}
		pkts = append(pkts, f)
	}
	if len(pkts) != len(msgs) {
		t.Fatalf("tshark shows %d packets, want %d:\n%s", len(pkts), len(msgs), out)
	}
	t.Logf("tshark:\n%s", out)
	return pkts
}

// checkTsharkClean checks that the first field of each packet, the
// procedure codes, starts with the message's (more come from criticality
// diagnostics) and that the second and third, _ws.malformed and
// _ws.expert.message, are empty.
func checkTsharkClean(t *testing.T, msgs []Message, pkts [][]string) {
	t.Helper()
	for i, f := range pkts {
		if pcs := strings.Split(f[0], ","); pcs[0] != fmt.Sprint(msgs[i].ProcedureCode()) {
			t.Errorf("%T: tshark sees procedure %q", msgs[i], f[0])
		}
		if f[1] != "" || f[2] != "" {
			t.Errorf("%T: tshark reports malformed=%q expert=%q", msgs[i], f[1], f[2])
		}
	}
}

// TestTsharkDissects has Wireshark read our PDU session messages (transfers
// included) and checks that it flags nothing as malformed.
func TestTsharkDissects(t *testing.T) {
	pc := ProcPDUSessionResourceSetup
	msgs := samplePDUSessionMessages(&CriticalityDiagnostics{ProcedureCode: &pc})
	pkts := tsharkDissect(t, msgs, "ngap.procedureCode", "_ws.malformed", "_ws.expert.message",
		"ngap.TransportLayerAddressIPv4", "ngap.gTP_TEID", "ngap.qosFlowIdentifier")
	checkTsharkClean(t, msgs, pkts)
	var tunnels int
	for _, f := range pkts {
		if strings.Contains(f[3], "10.100.3.") {
			tunnels++
		}
	}
	// the first sample: Setup Request with setupReqT (IPv4 UPF tunnel, QFIs
	// 1 and 63) and setupReqMinT (IPv6 tunnel TEID 7, QFI 0)
	if f := pkts[0]; f[3] != "10.100.3.2" || f[4] != "00000001,00000007" || f[5] != "1,63,0" {
		t.Errorf("setup request transfers as tshark reads them: %q", f)
	}
	if tunnels == 0 {
		t.Errorf("tshark decoded no GTP tunnel inside the transfers")
	}
}

// TestTsharkDissectsMobility has Wireshark read the paging and mobility
// messages, each with all its optional IEs and with none, transfers and
// transparent containers included: no packet may be malformed or raise an
// expert message, and the values that only the transfers and the RAN status
// container carry must show.
func TestTsharkDissectsMobility(t *testing.T) {
	pc := ProcHandoverPreparation
	msgs := sampleMobilityMessages(&CriticalityDiagnostics{ProcedureCode: &pc})
	fields := []string{"ngap.procedureCode", "_ws.malformed", "_ws.expert.message",
		"ngap.gTP_TEID", "ngap.qosFlowIdentifier", "ngap.pDUSessionID",
		"ngap.dRB_ID", "ngap.pDCP_SN12", "ngap.hFN_PDCP_SN12", "ngap.pDCP_SN18", "ngap.hFN_PDCP_SN18", "ngap.receiveStatusOfUL_PDCP_SDUs",
		"ngap.nextHopChainingCount", "ngap.HandoverType", "ngap.DirectForwardingPathAvailability", "ngap.directForwardingPathAvailability",
		"ngap.dataForwardingAccepted",
		"ngap.dL_NGU_TNLInformationReused", "ngap.fiveG_TMSI", "ngap.PagingPriority", "ngap.PagingOrigin",
		"ngap.gNB_ID", "ngap.TransportLayerAddressIPv6", "ngap.PagingDRX"}
	pkts := tsharkDissect(t, msgs, fields...)
	checkTsharkClean(t, msgs, pkts)

	// expectations for the first (all optional IEs) sample of each type
	want := map[reflect.Type]map[string]string{
		reflect.TypeFor[*Paging](): {"ngap.fiveG_TMSI": "3735928559", "ngap.PagingPriority": "7", "ngap.PagingOrigin": "0", "ngap.PagingDRX": "1"},
		// psReqT (gNB tunnel, reused, QFIs 1 63) and psReqMinT (IPv6, QFI 0)
		reflect.TypeFor[*PathSwitchRequest](): {"ngap.gTP_TEID": "fedcba98,00000007", "ngap.qosFlowIdentifier": "1,63,0",
			"ngap.dL_NGU_TNLInformationReused": "0", "ngap.pDUSessionID": "1,5,1", "ngap.TransportLayerAddressIPv6": "2001:db8::3"},
		reflect.TypeFor[*PathSwitchRequestAcknowledge](): {"ngap.gTP_TEID": "00000001", "ngap.nextHopChainingCount": "7", "ngap.pDUSessionID": "1,5,1"},
		// the source to target container names PDU session 1 too
		reflect.TypeFor[*HandoverRequired](): {"ngap.HandoverType": "0", "ngap.DirectForwardingPathAvailability": "0",
			"ngap.directForwardingPathAvailability": "0", "ngap.gNB_ID": "000102", "ngap.pDUSessionID": "1,5,1"},
		// hoCmdT (DL forwarding, QFIs 1 2, UL forwarding over IPv6)
		reflect.TypeFor[*HandoverCommand](): {"ngap.gTP_TEID": "0000f00d,0000beef", "ngap.qosFlowIdentifier": "1,2",
			"ngap.TransportLayerAddressIPv6": "2001:db8::9", "ngap.pDUSessionID": "1,5,1"},
		reflect.TypeFor[*HandoverRequest](): {"ngap.nextHopChainingCount": "2", "ngap.gTP_TEID": "00000001,00000007", "ngap.pDUSessionID": "1,255,1"},
		// hoAckT (gNB and forwarding tunnels, QFI 1 forwarded, 2, 3
		// failed) and hoAckMinT (IPv6, QFI 9)
		reflect.TypeFor[*HandoverRequestAcknowledge](): {"ngap.gTP_TEID": "fedcba98,0000f00d,00000007", "ngap.qosFlowIdentifier": "1,2,3,9",
			"ngap.dataForwardingAccepted": "0", "ngap.pDUSessionID": "1,5,1,5"},
		reflect.TypeFor[*UplinkRANStatusTransfer](): {"ngap.dRB_ID": "1,32,4", "ngap.pDCP_SN12": "4095,907,1", "ngap.hFN_PDCP_SN12": "1048575,987,2",
			"ngap.pDCP_SN18": "262143,5,3", "ngap.hFN_PDCP_SN18": "16383,0,4",
			"ngap.receiveStatusOfUL_PDCP_SDUs": "a580," + strings.Repeat("5a", 256)},
		// plus a DRB whose bitmap comes in two fragments
		reflect.TypeFor[*DownlinkRANStatusTransfer](): {"ngap.dRB_ID": "1,32,4,5", "ngap.pDCP_SN12": "4095,907,1,8", "ngap.hFN_PDCP_SN12": "1048575,987,2,9",
			"ngap.pDCP_SN18": "262143,5,3,6", "ngap.hFN_PDCP_SN18": "16383,0,4,7",
			"ngap.receiveStatusOfUL_PDCP_SDUs": "a580," + strings.Repeat("5a", 256) + "," + strings.Repeat("3c", 2049)},
	}
	seen := map[reflect.Type]bool{}
	for i, m := range msgs {
		typ := reflect.TypeOf(m)
		if seen[typ] {
			continue
		}
		seen[typ] = true
		for name, v := range want[typ] {
			j := slices.Index(fields, name)
			if j < 0 {
				t.Fatalf("field %s not asked for", name)
			}
			if pkts[i][j] != v {
				t.Errorf("%T: tshark reads %s %q, want %q", m, name, pkts[i][j], v)
			}
		}
	}
}
