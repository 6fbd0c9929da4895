package gtpu_test

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/pcap"
)

// TestTsharkDissects has Wireshark's GTP dissector, an independent decoder,
// read the messages we build (on UDP 2152) and checks the message types and
// TEIDs it sees and that it flags nothing as malformed.
func TestTsharkDissects(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("needs tshark (apt-get install tshark)")
	}
	msgs := []struct {
		b    []byte
		typ  uint8
		teid uint32
	}{
		{gtpu.AppendGPDU(nil, 0x200, 9, true, ipv4Sample()), gtpu.TypeGPDU, 0x200},
		{gtpu.AppendEndMarker(nil, 0xa0b0c0d0), gtpu.TypeEndMarker, 0xa0b0c0d0},
		{gtpu.AppendEchoRequest(nil, 7), gtpu.TypeEchoRequest, 0},
		{gtpu.AppendEchoResponse(nil, 7), gtpu.TypeEchoResponse, 0},
		{gtpu.AppendErrorIndication(nil, &gtpu.ErrorIndication{Seq: 1, TEID: 0x999, PeerAddr: []byte{10, 100, 3, 2}, UDPPort: 40000}),
			gtpu.TypeErrorIndication, 0},
	}
	path := filepath.Join(t.TempDir(), "gtpu.pcap")
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	upf, gnb := netip.MustParseAddrPort("10.100.3.2:2152"), netip.MustParseAddrPort("10.100.3.1:2152")
	for _, m := range msgs {
		w.WriteUDP(time.Unix(1_790_000_000, 0), upf, gnb, m.b)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=|",
		"-e", "gtp.message", "-e", "gtp.teid", "-e", "_ws.malformed", "-e", "_ws.expert.message").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && l[0] == '0' {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(msgs) {
		t.Fatalf("tshark shows %d packets, want %d:\n%s", len(lines), len(msgs), out)
	}
	for i, l := range lines {
		f := strings.Split(l, "|")
		if len(f) != 4 {
			t.Fatalf("line %q", l)
		}
		want := []string{fmt.Sprintf("0x%02x", msgs[i].typ), fmt.Sprintf("0x%08x", msgs[i].teid)}
		if f[0] != want[0] || f[1] != want[1] {
			t.Errorf("message %d: tshark sees type %s TEID %s, want %s %s", i, f[0], f[1], want[0], want[1])
		}
		if f[2] != "" || f[3] != "" {
			t.Errorf("message %d (type %d): tshark reports malformed=%q expert=%q", i, msgs[i].typ, f[2], f[3])
		}
	}
}

// ipv4Sample is a small IPv4/UDP packet (checksums zero).
func ipv4Sample() []byte {
	return unhexF("45000020 00000000 40110000 0a640602 0a3c0001 03e8 07d0 000c 0000 deadbeef")
}
