package upf

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/tern5g/tern/internal/ipv4pkt"
)

// TestStampFrameIsXDPGen: the user-space generators' frames are xdp_gen's,
// byte for byte but the send time: xdp_gen runs with plain BPF_PROG_RUN
// (which kernels that refuse live frames allow) on uplink, downlink and
// plain templates, in index and scattered order, and stampFrame rewrites
// a copy of each template for the same sequence number.
func TestStampFrameIsXDPGen(t *testing.T) {
	if err := Check(); err != nil {
		t.Skip(err)
	}
	const n = 7
	p, err := loadProgs(n)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ss, err := Plan(n, netip.MustParsePrefix(poolStr), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	gnb, n3 := netip.MustParseAddr("10.100.3.1"), netip.MustParseAddr("10.100.3.2")
	type build func() ([]byte, genConfig, error)
	for name, f := range map[string]build{
		"uplink":   func() ([]byte, genConfig, error) { return uplinkFrame(a, b, gnb, n3, ss, 100) },
		"downlink": func() ([]byte, genConfig, error) { return downlinkFrame(a, b, ss, 64) },
		"plain":    func() ([]byte, genConfig, error) { return plainFrame(a, b, gnb, dnServer, n, 64) },
	} {
		frame, cfg, err := f()
		if err != nil {
			t.Fatal(err)
		}
		for _, stride := range []uint32{0, scatterStride(n)} {
			cfg.Stride = stride
			if err := p.objs.GenCfg.Update(uint32(0), &cfg, ebpf.UpdateAny); err != nil {
				t.Fatal(err)
			}
			for _, seq := range []uint64{0, 1, 5, n + 3, 1 << 33} {
				if err := p.objs.GenState.Update(uint32(0), &benchGenState{Seq: seq}, ebpf.UpdateAny); err != nil {
					t.Fatal(err)
				}
				kernel := make([]byte, len(frame))
				ret, err := p.objs.XdpGen.Run(&ebpf.RunOptions{Data: frame, DataOut: kernel})
				if err != nil || ret != 3 { // XDP_TX
					t.Fatalf("%s: xdp_gen: %d, %v", name, ret, err)
				}
				user := bytes.Clone(frame)
				ts := binary.NativeEndian.Uint64(kernel[cfg.StampOff+16:])
				stampFrame(user, &cfg, seq, ts)
				if !bytes.Equal(user, kernel) {
					t.Fatalf("%s stride %d seq %d:\nxdp_gen    % x\nstampFrame % x", name, stride, seq, kernel, user)
				}
				if cfg.IpOff != 0 && ipv4pkt.Checksum(user[cfg.IpOff:cfg.IpOff+20], 0) != 0 {
					t.Fatalf("%s: IPv4 header checksum", name)
				}
			}
		}
	}
}
