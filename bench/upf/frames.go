package upf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/pfcp"
)

// Header sizes. A packet's size in this benchmark is its IPv4 total length
// as the user's side sees it: the inner packet on N3 (which carries
// Overhead bytes more), the packet itself on N6 and on the kernel
// reference's plain paths.
const (
	ethLen         = 14
	IPv4UDPHeaders = 20 + 8
	// Overhead is what N3 adds: outer IPv4, UDP and the GTP-U header with
	// a PDU Session Container (TS 29.281 §5.2, TS 38.415).
	Overhead = 20 + 8 + gtpu.GPDUHeaderLen
	// QFI marked on uplink G-PDUs, as a gNB does for the default flow.
	QFI = 1
	// stampLen is the generator's stamp (struct stamp in bpf/bench.c):
	// magic, session index, sequence number, send time.
	stampLen = 24
	// MinSize is the smallest packet that carries the stamp.
	MinSize = IPv4UDPHeaders + stampLen
	// sinkPort is the UDP port of the benchmark's packets on the user's
	// side (the sink does not care; it is for tcpdump).
	sinkPort = 9000
)

// CheckSize says whether size can be a benchmark packet: room for the
// headers and the stamp, no fragmentation on an N6 device of mtu bytes.
func CheckSize(size, mtu int) error {
	if size < MinSize || size > mtu {
		return fmt.Errorf("packet size %d: want %d..%d bytes (IPv4 total length; N6 MTU %d)", size, MinSize, mtu, mtu)
	}
	return nil
}

// IPv4UDP builds an IPv4/UDP packet of exactly size bytes (IPv4 total
// length) from src to dst, with valid checksums and a zero payload.
func IPv4UDP(src, dst netip.AddrPort, size int) ([]byte, error) {
	if !src.Addr().Is4() || !dst.Addr().Is4() {
		return nil, fmt.Errorf("bench upf: %v -> %v: IPv4 only", src, dst)
	}
	if size < IPv4UDPHeaders || size > 0xFFFF {
		return nil, fmt.Errorf("bench upf: size %d: want %d..65535", size, IPv4UDPHeaders)
	}
	return ipv4pkt.AppendUDP(make([]byte, 0, size), src.Addr(), dst.Addr(), src.Port(), dst.Port(), make([]byte, size-IPv4UDPHeaders)), nil
}

// UplinkGPDU wraps inner in a G-PDU for teid with an UL PDU Session
// Container carrying QFI, as a gNB sends it on N3.
func UplinkGPDU(teid uint32, inner []byte) []byte {
	return gtpu.AppendGPDU(make([]byte, 0, gtpu.GPDUHeaderLen+len(inner)), teid, QFI, false, inner)
}

// ethFrame puts an Ethernet header from src to dst in front of an IPv4
// packet.
func ethFrame(dst, src net.HardwareAddr, pkt []byte) []byte {
	f := make([]byte, ethLen, ethLen+len(pkt))
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:14], 0x0800)
	return append(f, pkt...)
}

// uplinkFrame is a G-PDU from the gNB to the UPF's N3 for session 0 of
// ss, and the generator's settings that move it over all of them: the
// TEID and the inner source address follow the session index.
func uplinkFrame(dst, src net.HardwareAddr, gnb, n3 netip.Addr, ss []Session, size int) ([]byte, genConfig, error) {
	inner, err := IPv4UDP(netip.AddrPortFrom(ss[0].UE, sinkPort), netip.AddrPortFrom(dnServer, sinkPort), size)
	if err != nil {
		return nil, genConfig{}, err
	}
	outer := ipv4pkt.AppendUDP(nil, gnb, n3, gtpu.Port, gtpu.Port, UplinkGPDU(ss[0].ULTEID, inner))
	// The outer UDP checksum is optional over IPv4 (RFC 768) and would
	// go stale as the generator rewrites the TEID: zero it.
	binary.BigEndian.PutUint16(outer[26:28], 0)
	binary.BigEndian.PutUint16(outer[20+8+gtpu.GPDUHeaderLen+26:], 0)
	innerIP := ethLen + 20 + 8 + gtpu.GPDUHeaderLen
	return ethFrame(dst, src, outer), genConfig{
		Sessions: uint32(len(ss)),
		TeidOff:  ethLen + 20 + 8 + 4, TeidBase: ss[0].ULTEID,
		IpOff: uint32(innerIP), AddrOff: 12, AddrBase: ip4(ss[0].UE),
		StampOff: uint32(innerIP + IPv4UDPHeaders),
	}, nil
}

// downlinkFrame is a packet from the DN server to the UE of session 0,
// and the generator's settings that move its destination over ss.
func downlinkFrame(dst, src net.HardwareAddr, ss []Session, size int) ([]byte, genConfig, error) {
	pkt, err := IPv4UDP(netip.AddrPortFrom(dnServer, sinkPort), netip.AddrPortFrom(ss[0].UE, sinkPort), size)
	if err != nil {
		return nil, genConfig{}, err
	}
	binary.BigEndian.PutUint16(pkt[26:28], 0)
	return ethFrame(dst, src, pkt), genConfig{
		Sessions: uint32(len(ss)),
		IpOff:    ethLen, AddrOff: 16, AddrBase: ip4(ss[0].UE),
		StampOff: ethLen + IPv4UDPHeaders,
	}, nil
}

// plainFrame is a packet from a to b that the generator stamps and does not
// otherwise change: the kernel reference's traffic. The session index
// still cycles over n, in the stamp only.
func plainFrame(dst, src net.HardwareAddr, a, b netip.Addr, n, size int) ([]byte, genConfig, error) {
	pkt, err := IPv4UDP(netip.AddrPortFrom(a, sinkPort), netip.AddrPortFrom(b, sinkPort), size)
	if err != nil {
		return nil, genConfig{}, err
	}
	binary.BigEndian.PutUint16(pkt[26:28], 0)
	return ethFrame(dst, src, pkt), genConfig{Sessions: uint32(n), StampOff: ethLen + IPv4UDPHeaders}, nil
}

func ip4(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

// Session is one PDU session the benchmark installs.
type Session struct {
	UE     netip.Addr
	ULTEID uint32 // the UPF's N3 F-TEID (fixed by the "SMF", no CHOOSE)
	DLTEID uint32 // the gNB's N3 TEID
	CPSEID uint64
	UPSEID uint64 // filled in by Install
	SDF    bool   // its PDRs carry an SDF filter
}

// Plan returns n sessions with consecutive UE addresses from pool (the
// generator computes a session's address and TEID from its index),
// skipping the network address and the first host (the N6 device's own
// address). Every sdfEvery-th session carries SDF filters (0 = none).
func Plan(n int, pool netip.Prefix, sdfEvery int) ([]Session, error) {
	if n < 1 {
		return nil, errors.New("bench upf: at least one session")
	}
	if !pool.Addr().Is4() || pool.Bits() > 30 || n > 1<<(32-pool.Bits())-3 {
		return nil, fmt.Errorf("bench upf: %d sessions do not fit in pool %v", n, pool)
	}
	if n > maxSessions {
		return nil, fmt.Errorf("bench upf: %d sessions: the sink tracks at most %d", n, maxSessions)
	}
	ss := make([]Session, n)
	a := pool.Masked().Addr().Next().Next()
	for i := range ss {
		ss[i] = Session{UE: a, ULTEID: 0x10000 + uint32(i), DLTEID: 0x200000 + uint32(i), CPSEID: uint64(i + 1),
			SDF: sdfEvery > 0 && i%sdfEvery == sdfEvery-1}
		a = a.Next()
	}
	return ss, nil
}

// maxSessions is what the sink's bitmap of sessions seen holds (SEEN_WORDS
// in bpf/bench.c).
const maxSessions = 4096 * 64

// Topology is what the rules refer to.
type Topology struct {
	SMF netip.Addr // the CP node ID and F-SEID address
	N3  netip.Addr // the UPF's N3 address (F-TEID)
	GNB netip.Addr // the gNB's N3 address (DL outer header creation)
	DNN string     // network instance of the N6 side
}

// sdfFlow is the SDF filter of the sessions that carry one: it matches the
// benchmark's traffic (to and from the DN server), so such a session
// forwards like the others and costs what a filter costs to match.
const sdfFlow = "permit out 17 from 192.0.2.0/24 to assigned"

// mbrKbps is each session's MBR: 1 Tbit/s, so that the QER is enforced on
// every packet but never limits.
const mbrKbps = 1_000_000_000

// Establishment is the PFCP request an SMF sends for s once the gNB's
// tunnel is known (TS 23.502 §4.3.2.2.1 steps 10a and 16a folded into one):
// UL PDR by F-TEID with outer header removal, FAR forwarding to the DN; DL
// PDR by UE address, FAR forwarding to the gNB with GTP-U outer header
// creation (TS 29.244 §5.2.1, §5.2.2); both PDRs with the session's QER
// (MBR, never reached) and a volume-measuring URR, as tern's SMF installs
// them, and an SDF filter when s.SDF.
func Establishment(s Session, t Topology) *pfcp.SessionEstablishmentRequest {
	ohr := pfcp.OuterHeaderRemovalGTPUUDPIPv4
	var sdf []pfcp.SDFFilter
	if s.SDF {
		sdf = []pfcp.SDFFilter{{FlowDescription: sdfFlow}}
	}
	return &pfcp.SessionEstablishmentRequest{
		NodeID:  pfcp.NodeID{IP: t.SMF},
		CPFSEID: pfcp.FSEID{SEID: s.CPSEID, IPv4: t.SMF},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 1, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess,
				FTEID: &pfcp.FTEID{TEID: s.ULTEID, IPv4: t.N3}, NetworkInstance: t.DNN, UEIP: &pfcp.UEIPAddress{IPv4: s.UE}, SDFFilters: sdf},
				OuterHeaderRemoval: &ohr, FARID: 1, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
			{ID: 2, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, NetworkInstance: t.DNN,
				UEIP: &pfcp.UEIPAddress{IPv4: s.UE, Destination: true}, SDFFilters: sdf},
				FARID: 2, QERIDs: []uint32{1}, URRIDs: []uint32{1}},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: t.DNN}},
			{ID: 2, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: s.DLTEID, IPv4: t.GNB}}},
		},
		CreateQERs: []pfcp.CreateQER{{ID: 1, MBR: &pfcp.BitRate{UL: mbrKbps, DL: mbrKbps}}},
		CreateURRs: []pfcp.CreateURR{{ID: 1, Method: pfcp.MethodVolume}},
		PDNType:    pfcp.PDNTypeIPv4,
	}
}

// Install establishes every session over up and records the UP SEIDs.
func Install(ctx context.Context, up pfcp.UserPlane, t Topology, ss []Session) error {
	for i := range ss {
		r, err := up.EstablishSession(ctx, Establishment(ss[i], t))
		if err != nil {
			return fmt.Errorf("bench upf: session %d: %w", i, err)
		}
		if r.Cause != pfcp.CauseRequestAccepted || r.UPFSEID == nil {
			return fmt.Errorf("bench upf: session %d: UPF answered cause %v (offending IE %d, failed rule %v)", i, r.Cause, r.OffendingIE, r.FailedRuleID)
		}
		ss[i].UPSEID = r.UPFSEID.SEID
	}
	return nil
}

// Remove deletes the sessions Install established.
func Remove(ctx context.Context, up pfcp.UserPlane, ss []Session) error {
	var errs []error
	for i := range ss {
		if ss[i].UPSEID == 0 {
			continue
		}
		r, err := up.DeleteSession(ctx, ss[i].UPSEID)
		if err == nil && r.Cause != pfcp.CauseRequestAccepted {
			err = fmt.Errorf("cause %v", r.Cause)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("bench upf: delete session %d: %w", i, err))
			continue
		}
		ss[i].UPSEID = 0
	}
	return errors.Join(errs...)
}
