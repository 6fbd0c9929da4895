// Package classify finds the highest-precedence Packet Detection Rule (PDR)
// that matches a packet: the per-packet lookup of a UPF (TS 29.244 §5.2.1).
//
// All classifiers share one interface (Classifier) and return exactly what
// the 3GPP baseline, a precedence-ordered linear scan, returns. Lookups are
// lock-free and allocation-free and may run concurrently with Insert and
// Delete; writers are serialized internally.
package classify

import (
	"errors"
	"fmt"
	"net/netip"
)

// Addr is an IPv6 address, or an IPv4 address in its IPv4-mapped form
// (::ffff:a.b.c.d), as two big-endian 64-bit halves so that prefix tests
// are two masked compares.
type Addr struct{ Hi, Lo uint64 }

// AddrFrom4 maps an IPv4 address (host order) into the IPv6 space.
func AddrFrom4(v4 uint32) Addr { return Addr{Hi: 0, Lo: 0xffff<<32 | uint64(v4)} }

// AddrFrom16 converts a 16-byte IPv6 address.
func AddrFrom16(b [16]byte) Addr {
	var a Addr
	for i := 0; i < 8; i++ {
		a.Hi = a.Hi<<8 | uint64(b[i])
		a.Lo = a.Lo<<8 | uint64(b[8+i])
	}
	return a
}

// AddrFromNetip converts a netip.Addr (IPv4 addresses become IPv4-mapped).
func AddrFromNetip(a netip.Addr) Addr { return AddrFrom16(a.As16()) }

// Is4 reports whether a is an IPv4-mapped address.
func (a Addr) Is4() bool { return a.Hi == 0 && a.Lo>>32 == 0xffff }

// Netip converts back (IPv4-mapped addresses become IPv4).
func (a Addr) Netip() netip.Addr {
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(a.Hi >> (56 - 8*i))
		b[8+i] = byte(a.Lo >> (56 - 8*i))
	}
	return netip.AddrFrom16(b).Unmap()
}

// Prefix is an address prefix over the 128-bit space. Len 0 matches every
// address (IPv4 and IPv6); an IPv4 /n is Len 96+n on the mapped address.
type Prefix struct {
	Addr Addr
	Len  uint8
}

// PrefixFrom4 builds an IPv4 prefix. /0 is the wildcard "any" (SDF filter
// keyword "any", TS 29.244 §5.2.1A), not "any IPv4 address".
func PrefixFrom4(v4 uint32, bits int) Prefix {
	if bits <= 0 {
		return Prefix{}
	}
	p := Prefix{Addr: AddrFrom4(v4), Len: uint8(96 + min(bits, 32))}
	p.Addr = p.Addr.masked(p.Len)
	return p
}

// PrefixFromNetip converts a netip.Prefix (an IPv4 /0 becomes the wildcard).
func PrefixFromNetip(p netip.Prefix) Prefix {
	a := p.Addr()
	bits := p.Bits()
	if bits <= 0 {
		return Prefix{}
	}
	if a.Is4() {
		bits += 96
	}
	out := Prefix{Addr: AddrFromNetip(a), Len: uint8(bits)}
	out.Addr = out.Addr.masked(out.Len)
	return out
}

// Contains reports whether a lies in p.
func (p Prefix) Contains(a Addr) bool { return prefixMatch(a, p.Addr, p.Len) }

func (a Addr) masked(l uint8) Addr {
	hi, lo := mask128(l)
	return Addr{a.Hi & hi, a.Lo & lo}
}

// mask128 returns the two halves of a /l netmask without branches (Go
// shifts of 64 or more give 0).
func mask128(l uint8) (hi, lo uint64) {
	hi = ^uint64(0) << (64 - uint(min(l, 64)))
	lo = ^uint64(0) << (128 - uint(max(l, 64)))
	return hi, lo
}

func prefixMatch(a, v Addr, l uint8) bool {
	hi, lo := mask128(l)
	return a.Hi&hi == v.Hi && a.Lo&lo == v.Lo
}

// PortRange is an inclusive port range.
type PortRange struct{ Lo, Hi uint16 }

// Field flags the optional PDI match fields a Rule carries (TS 29.244
// §7.5.2.2, L25GC Table 3). A field that is not set matches everything.
// Prefixes need no flag: Len 0 is "any".
type Field uint16

const (
	FieldSourceInterface Field = 1 << iota // Source Interface IE
	FieldTEID                              // Local F-TEID: TEID
	FieldNetworkInstance                   // Network Instance IE (interned to an ID)
	FieldQFI                               // QoS Flow ID
	FieldAppID                             // Application ID (interned to an ID)
	FieldSrcPort                           // SDF filter source port range
	FieldDstPort                           // SDF filter destination port range
	FieldProto                             // SDF filter protocol / next header
	FieldToS                               // SDF filter ToS / traffic class with mask
	FieldSPI                               // SDF filter security parameter index
	FieldFlowLabel                         // SDF filter IPv6 flow label
)

// Rule is the packet detection part of a PDR: its PDI match fields and its
// precedence (TS 29.244 §7.5.2.2). The SDF filter is the single-filter form;
// a PDR with several SDF filters becomes several rules with the same
// precedence and distinct IDs.
type Rule struct {
	// ID is what Lookup returns; unique within a classifier.
	ID uint32
	// Precedence: a lower value wins (TS 29.244 §5.2.1). Rules with equal
	// precedence are ordered by ID, so every lookup has one answer.
	Precedence uint32
	// Has lists the optional fields below that take part in the match.
	Has Field

	SourceInterface uint8  // TS 29.244 §8.2.2 (0 access, 1 core, ...)
	TEID            uint32 // local F-TEID (TS 29.244 §8.2.3)
	UEIP            Prefix // UE IP address (TS 29.244 §8.2.62), usually /32 or /128
	NetworkInstance uint32
	QFI             uint8
	AppID           uint32

	// SDF filter (TS 29.244 §8.2.5).
	SrcIP, DstIP     Prefix
	SrcPort, DstPort PortRange
	Proto            uint8
	ToS, ToSMask     uint8  // traffic class and its mask
	SPI              uint32 // IPsec security parameter index
	FlowLabel        uint32 // IPv6 flow label, 20 bits
}

// Header holds the fields of one packet that rules can match. The caller
// fills UEIP with the inner source address for uplink and the destination
// address for downlink (the UE IP address IE's S/D flag), and the SDF
// fields in the direction its rules are written. IDs for network instance
// and application are the caller's interned values.
type Header struct {
	SrcIP, DstIP Addr
	UEIP         Addr
	// TEID, QFI, SourceInterface, Proto and ToS lie together in this
	// order: per-session lookups read them as one word (packWord).
	TEID             uint32
	QFI              uint8
	SourceInterface  uint8
	Proto            uint8
	ToS              uint8
	NetworkInstance  uint32
	AppID            uint32
	SPI              uint32
	FlowLabel        uint32
	SrcPort, DstPort uint16
}

// Errors returned by Insert and Delete.
var (
	ErrDuplicateID = errors.New("classify: duplicate rule ID")
	ErrNotFound    = errors.New("classify: no rule with this ID")
	ErrBadRule     = errors.New("classify: invalid rule")
)

// Validate checks the field ranges of r.
func (r *Rule) Validate() error {
	if r.ID == ^uint32(0) {
		return fmt.Errorf("%w: ID %#x is reserved", ErrBadRule, r.ID)
	}
	for _, p := range []Prefix{r.SrcIP, r.DstIP, r.UEIP} {
		if p.Len > 128 {
			return fmt.Errorf("%w %d: prefix length %d", ErrBadRule, r.ID, p.Len)
		}
	}
	if r.Has&FieldSrcPort != 0 && r.SrcPort.Lo > r.SrcPort.Hi {
		return fmt.Errorf("%w %d: source port range %d-%d", ErrBadRule, r.ID, r.SrcPort.Lo, r.SrcPort.Hi)
	}
	if r.Has&FieldDstPort != 0 && r.DstPort.Lo > r.DstPort.Hi {
		return fmt.Errorf("%w %d: destination port range %d-%d", ErrBadRule, r.ID, r.DstPort.Lo, r.DstPort.Hi)
	}
	if r.Has&FieldQFI != 0 && r.QFI > 63 {
		return fmt.Errorf("%w %d: QFI %d > 63", ErrBadRule, r.ID, r.QFI)
	}
	if r.Has&FieldFlowLabel != 0 && r.FlowLabel > 0xfffff {
		return fmt.Errorf("%w %d: flow label %#x > 20 bits", ErrBadRule, r.ID, r.FlowLabel)
	}
	return nil
}

// Matches is the reference semantics of a rule: the field-by-field
// definition every classifier must agree with.
func (r *Rule) Matches(h *Header) bool {
	if !r.SrcIP.Contains(h.SrcIP) || !r.DstIP.Contains(h.DstIP) || !r.UEIP.Contains(h.UEIP) {
		return false
	}
	has := r.Has
	switch {
	case has&FieldSourceInterface != 0 && h.SourceInterface != r.SourceInterface,
		has&FieldTEID != 0 && h.TEID != r.TEID,
		has&FieldNetworkInstance != 0 && h.NetworkInstance != r.NetworkInstance,
		has&FieldQFI != 0 && h.QFI != r.QFI,
		has&FieldAppID != 0 && h.AppID != r.AppID,
		has&FieldSrcPort != 0 && (h.SrcPort < r.SrcPort.Lo || h.SrcPort > r.SrcPort.Hi),
		has&FieldDstPort != 0 && (h.DstPort < r.DstPort.Lo || h.DstPort > r.DstPort.Hi),
		has&FieldProto != 0 && h.Proto != r.Proto,
		has&FieldToS != 0 && h.ToS&r.ToSMask != r.ToS&r.ToSMask,
		has&FieldSPI != 0 && h.SPI != r.SPI,
		has&FieldFlowLabel != 0 && h.FlowLabel != r.FlowLabel:
		return false
	}
	return true
}

// rank orders rules: lower is better. The ID sits in the low half so that
// the winning ID can be read back from the winning rank.
func (r *Rule) rank() uint64 { return uint64(r.Precedence)<<32 | uint64(r.ID) }

// noRank is worse than every rule's rank (Validate reserves ID 2^32-1).
const noRank = ^uint64(0)

// Masked returns p with the host bits cleared.
func (p Prefix) Masked() Prefix { return Prefix{Addr: p.Addr.masked(p.Len), Len: p.Len} }
