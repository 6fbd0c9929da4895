// Package upfbench holds the parts of `tern bench upf` that are not the
// command itself: the packets it sends (IPv4/UDP of an exact size, wrapped
// in GTP-U for N3), the PFCP rules it installs acting as the SMF, and one
// timed run from a sender socket to a counting sink.
package upfbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/ipv4pkt"
	"github.com/tern5g/tern/internal/traffic"
	"github.com/tern5g/tern/pfcp"
)

// Header sizes. A packet's "size" in this benchmark is its IPv4 total
// length as the user's side sees it: the inner packet on the UPF paths
// (N3 carries Overhead bytes more), the packet itself on the kernel paths.
const (
	IPv4UDPHeaders = 20 + 8
	// Overhead is what N3 adds: outer IPv4, UDP and the GTP-U header with
	// a PDU Session Container (TS 29.281 §5.2, TS 38.415).
	Overhead = 20 + 8 + gtpu.GPDUHeaderLen
	// QFI marked on uplink G-PDUs, as a gNB does for the default flow.
	QFI = 1
)

// CheckSize says whether size can be a benchmark packet: room for the IPv4
// and UDP headers, no fragmentation on an N6 device of mtu bytes.
func CheckSize(size, mtu int) error {
	if size < IPv4UDPHeaders || size > mtu {
		return fmt.Errorf("packet size %d: want %d..%d bytes (IPv4 total length; N6 MTU %d)", size, IPv4UDPHeaders, mtu, mtu)
	}
	return nil
}

// Payload returns the UDP payload that makes an IPv4/UDP packet of size
// bytes, for plain sockets.
func Payload(size int) []byte {
	return make([]byte, max(size-IPv4UDPHeaders, 0))
}

// IPv4UDP builds an IPv4/UDP packet of exactly size bytes (IPv4 total
// length) from src to dst, with valid checksums.
func IPv4UDP(src, dst netip.AddrPort, size int) ([]byte, error) {
	if !src.Addr().Is4() || !dst.Addr().Is4() {
		return nil, fmt.Errorf("upfbench: %v -> %v: IPv4 only", src, dst)
	}
	if size < IPv4UDPHeaders || size > 0xFFFF {
		return nil, fmt.Errorf("upfbench: size %d: want %d..65535", size, IPv4UDPHeaders)
	}
	return ipv4pkt.AppendUDP(make([]byte, 0, size), src.Addr(), dst.Addr(), src.Port(), dst.Port(), make([]byte, size-IPv4UDPHeaders)), nil
}

// UplinkGPDU wraps inner in a G-PDU for teid with an UL PDU Session
// Container carrying QFI, as a gNB sends it on N3.
func UplinkGPDU(teid uint32, inner []byte) []byte {
	return gtpu.AppendGPDU(make([]byte, 0, gtpu.GPDUHeaderLen+len(inner)), teid, QFI, false, inner)
}

// Session is one PDU session the benchmark installs.
type Session struct {
	UE     netip.Addr
	ULTEID uint32 // the UPF's N3 F-TEID (fixed by the "SMF", no CHOOSE)
	DLTEID uint32 // the gNB's N3 TEID
	CPSEID uint64
	UPSEID uint64 // filled in by Install
}

// Plan returns n sessions with UE addresses from pool, skipping the
// network address and the first host (the N6 device's own address).
func Plan(n int, pool netip.Prefix) ([]Session, error) {
	if n < 1 {
		return nil, errors.New("upfbench: at least one session")
	}
	if !pool.Addr().Is4() || pool.Bits() > 30 || n > 1<<(32-pool.Bits())-3 {
		return nil, fmt.Errorf("upfbench: %d sessions do not fit in pool %v", n, pool)
	}
	ss := make([]Session, n)
	a := pool.Masked().Addr().Next().Next()
	for i := range ss {
		ss[i] = Session{UE: a, ULTEID: 0x10000 + uint32(i), DLTEID: 0x20000 + uint32(i), CPSEID: uint64(i + 1)}
		a = a.Next()
	}
	return ss, nil
}

// Topology is what the rules refer to.
type Topology struct {
	SMF netip.Addr // the CP node ID and F-SEID address
	N3  netip.Addr // the UPF's N3 address (F-TEID)
	GNB netip.Addr // the gNB's N3 address (DL outer header creation)
	DNN string     // network instance of the N6 side
}

// Establishment is the PFCP request an SMF sends for s once the gNB's
// tunnel is known (TS 23.502 §4.3.2.2.1 steps 10a and 16a folded into one):
// UL PDR by F-TEID with outer header removal, FAR forwarding to the DN; DL
// PDR by UE address, FAR forwarding to the gNB with GTP-U outer header
// creation (TS 29.244 §5.2.1, §5.2.2). No QER or URR: the benchmark
// measures forwarding.
func Establishment(s Session, t Topology) *pfcp.SessionEstablishmentRequest {
	ohr := pfcp.OuterHeaderRemovalGTPUUDPIPv4
	node := pfcp.NodeID{IP: t.SMF}
	return &pfcp.SessionEstablishmentRequest{
		NodeID:  node,
		CPFSEID: pfcp.FSEID{SEID: s.CPSEID, IPv4: t.SMF},
		CreatePDRs: []pfcp.CreatePDR{
			{ID: 1, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess,
				FTEID: &pfcp.FTEID{TEID: s.ULTEID, IPv4: t.N3}, NetworkInstance: t.DNN, UEIP: &pfcp.UEIPAddress{IPv4: s.UE}},
				OuterHeaderRemoval: &ohr, FARID: 1},
			{ID: 2, Precedence: 255, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore, NetworkInstance: t.DNN,
				UEIP: &pfcp.UEIPAddress{IPv4: s.UE, Destination: true}},
				FARID: 2},
		},
		CreateFARs: []pfcp.CreateFAR{
			{ID: 1, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceCore, NetworkInstance: t.DNN}},
			{ID: 2, ApplyAction: pfcp.ActionForward, Forwarding: &pfcp.ForwardingParameters{Destination: pfcp.InterfaceAccess,
				OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: s.DLTEID, IPv4: t.GNB}}},
		},
		PDNType: pfcp.PDNTypeIPv4,
	}
}

// Install establishes every session over up and records the UP SEIDs.
func Install(ctx context.Context, up pfcp.UserPlane, t Topology, ss []Session) error {
	for i := range ss {
		r, err := up.EstablishSession(ctx, Establishment(ss[i], t))
		if err != nil {
			return fmt.Errorf("upfbench: session %d: %w", i, err)
		}
		if r.Cause != pfcp.CauseRequestAccepted || r.UPFSEID == nil {
			return fmt.Errorf("upfbench: session %d: UPF answered cause %v (offending IE %d, failed rule %v)", i, r.Cause, r.OffendingIE, r.FailedRuleID)
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
			errs = append(errs, fmt.Errorf("upfbench: delete session %d: %w", i, err))
			continue
		}
		ss[i].UPSEID = 0
	}
	return errors.Join(errs...)
}

// Flow is one direction of one path: datagrams from a sender socket,
// counted by a sink that Open creates for each run.
type Flow struct {
	Send      *net.UDPConn
	Datagrams []traffic.Datagram
	// OpenSink opens the receiving socket (in its namespace) for one run.
	OpenSink func() (*net.UDPConn, error)
}

// Sample is one timed run.
type Sample struct {
	Sent      uint64        // datagrams the sender's kernel accepted
	Delivered uint64        // datagrams the sink received
	Elapsed   time.Duration // the sending time
}

// PPS is delivered packets per second of sending time.
func (s Sample) PPS() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Delivered) / s.Elapsed.Seconds()
}

// Loss is the fraction of sent datagrams that did not arrive.
func (s Sample) Loss() float64 {
	if s.Sent == 0 || s.Delivered >= s.Sent {
		return 0
	}
	return float64(s.Sent-s.Delivered) / float64(s.Sent)
}

// Measure sends f's datagrams for d as fast as the sender can, waits drain
// for packets still on the way, and counts what the sink received.
func Measure(ctx context.Context, f Flow, d, drain time.Duration) (Sample, error) {
	conn, err := f.OpenSink()
	if err != nil {
		return Sample{}, fmt.Errorf("upfbench: sink: %w", err)
	}
	sink := traffic.NewSink(conn)
	defer sink.Close()
	start := time.Now()
	sent, err := traffic.Blast(ctx, f.Send, f.Datagrams, d)
	elapsed := time.Since(start)
	if err != nil {
		return Sample{}, fmt.Errorf("upfbench: send: %w", err)
	}
	select {
	case <-time.After(drain):
	case <-ctx.Done():
		return Sample{}, ctx.Err()
	}
	got, _ := sink.Counts()
	return Sample{Sent: sent, Delivered: got, Elapsed: elapsed}, nil
}
