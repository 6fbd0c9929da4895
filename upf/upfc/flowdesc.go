package upfc

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tern5g/tern/classify"
)

// FlowEndpoint is one side ("from" or "to") of an IPFilterRule.
type FlowEndpoint struct {
	// Any is the keyword "any": every address.
	Any bool
	// Assigned is the keyword "assigned": the UE's IP address (RFC 6733
	// §4.3; TS 29.212 §5.4.2 lets the PCF use it for the UE side).
	Assigned bool
	// Prefix is the address or prefix when neither keyword is used.
	Prefix netip.Prefix
	// Ports are the port ranges; empty means every port.
	Ports []classify.PortRange
}

// FlowDescription is a parsed SDF filter Flow Description (TS 29.244
// §8.2.5, encoded as in TS 29.212 §5.4.2: an RFC 6733 §4.3 IPFilterRule).
type FlowDescription struct {
	// Out is the direction keyword: true for "out" (towards the UE, the
	// only value TS 29.212 §5.4.2 allows), false for "in".
	Out bool
	// Proto is the IP protocol; AnyProto ("ip") matches all.
	Proto    uint8
	AnyProto bool
	From, To FlowEndpoint
}

// Errors returned by ParseFlowDescription.
var ErrFlowDescription = errors.New("invalid flow description")

// maxPortRanges bounds the port list of one endpoint so that a hostile
// filter cannot blow up the number of classifier rules it expands into.
const maxPortRanges = 8

// ParseFlowDescription parses an IPFilterRule with the restrictions of
// TS 29.212 §5.4.2: action "permit" only, no options, no "!" inversion.
//
//	permit out ip from any to assigned
//	permit out 17 from 10.0.0.0/8 1000-2000 to assigned
//	permit out 6 from 2001:db8::/32 80,443 to 10.60.0.1 1024-65535
func ParseFlowDescription(s string) (*FlowDescription, error) {
	toks := strings.Fields(s)
	fail := func(format string, args ...any) (*FlowDescription, error) {
		return nil, fmt.Errorf("%w %q: %s", ErrFlowDescription, s, fmt.Sprintf(format, args...))
	}
	next := func() string {
		if len(toks) == 0 {
			return ""
		}
		t := toks[0]
		toks = toks[1:]
		return t
	}
	var fd FlowDescription
	switch a := next(); a {
	case "permit":
	case "deny":
		// TS 29.212 §5.4.2: only "permit" shall be used.
		return fail("action deny is not allowed")
	default:
		return fail("action %q", a)
	}
	switch d := next(); d {
	case "out":
		fd.Out = true
	case "in":
	default:
		return fail("direction %q", d)
	}
	p := next()
	switch p {
	case "ip":
		fd.AnyProto = true
	case "":
		return fail("missing protocol")
	default:
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return fail("protocol %q", p)
		}
		fd.Proto = uint8(n)
	}
	if t := next(); t != "from" {
		return fail("expected \"from\", got %q", t)
	}
	var err error
	if fd.From, err = parseEndpoint(next, &toks, "to"); err != nil {
		return fail("from: %v", err)
	}
	if t := next(); t != "to" {
		return fail("expected \"to\", got %q", t)
	}
	if fd.To, err = parseEndpoint(next, &toks, ""); err != nil {
		return fail("to: %v", err)
	}
	if len(toks) > 0 {
		// TS 29.212 §5.4.2: no options shall be used.
		return fail("unexpected %q (options are not allowed)", toks[0])
	}
	if (len(fd.From.Ports) > 0 || len(fd.To.Ports) > 0) && !fd.AnyProto && fd.Proto != 6 && fd.Proto != 17 && fd.Proto != 132 {
		// Ports only exist for protocols that have them; RFC 6733 §4.3
		// leaves this open, but a port on ICMP could never match.
		return fail("ports with protocol %d", fd.Proto)
	}
	return &fd, nil
}

// parseEndpoint reads an address and an optional port list. stop is the
// keyword that may follow the endpoint instead of a port list.
func parseEndpoint(next func() string, rest *[]string, stop string) (FlowEndpoint, error) {
	var ep FlowEndpoint
	a := next()
	switch {
	case a == "":
		return ep, errors.New("missing address")
	case a == "any":
		ep.Any = true
	case a == "assigned":
		ep.Assigned = true
	case strings.HasPrefix(a, "!"):
		return ep, errors.New("inverted address is not allowed")
	default:
		pfx, err := parseAddr(a)
		if err != nil {
			return ep, err
		}
		ep.Prefix = pfx
	}
	if len(*rest) == 0 || (*rest)[0] == stop {
		return ep, nil
	}
	ports, err := parsePorts(next())
	if err != nil {
		return ep, err
	}
	ep.Ports = ports
	return ep, nil
}

func parseAddr(a string) (netip.Prefix, error) {
	if strings.Contains(a, "/") {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("address %q", a)
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("address %q has a zone", a)
		}
		return p.Masked(), nil
	}
	ip, err := netip.ParseAddr(a)
	if err != nil || ip.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("address %q", a)
	}
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}

// parsePorts reads "{port|port-port}[,...]".
func parsePorts(s string) ([]classify.PortRange, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxPortRanges {
		return nil, fmt.Errorf("more than %d port ranges", maxPortRanges)
	}
	out := make([]classify.PortRange, 0, len(parts))
	for _, p := range parts {
		lo, hi, isRange := strings.Cut(p, "-")
		l, err := parsePort(lo)
		if err != nil {
			return nil, err
		}
		h := l
		if isRange {
			if h, err = parsePort(hi); err != nil {
				return nil, err
			}
			if h < l {
				return nil, fmt.Errorf("port range %q", p)
			}
		}
		out = append(out, classify.PortRange{Lo: l, Hi: h})
	}
	return out, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("port %q", s)
	}
	return uint16(n), nil
}

// String writes fd back in IPFilterRule syntax.
func (fd *FlowDescription) String() string {
	var b strings.Builder
	b.WriteString("permit ")
	if fd.Out {
		b.WriteString("out ")
	} else {
		b.WriteString("in ")
	}
	if fd.AnyProto {
		b.WriteString("ip")
	} else {
		b.WriteString(strconv.Itoa(int(fd.Proto)))
	}
	b.WriteString(" from ")
	fd.From.write(&b)
	b.WriteString(" to ")
	fd.To.write(&b)
	return b.String()
}

func (ep *FlowEndpoint) write(b *strings.Builder) {
	switch {
	case ep.Any:
		b.WriteString("any")
	case ep.Assigned:
		b.WriteString("assigned")
	case ep.Prefix.Bits() == ep.Prefix.Addr().BitLen():
		b.WriteString(ep.Prefix.Addr().String())
	default:
		b.WriteString(ep.Prefix.String())
	}
	for i, p := range ep.Ports {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(p.Lo)))
		if p.Hi != p.Lo {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(p.Hi)))
		}
	}
}

// Rules expands fd into classifier rules for a packet travelling in the
// given direction. TS 29.212 §5.4.2: a filter written with "out" describes
// downlink packets (from = remote, to = UE); applied to uplink packets,
// source and destination swap. An "in" filter describes uplink packets as
// written. "assigned" stands for ueIP (any address when the session has
// none). Several port ranges expand to one rule per combination; base
// supplies every field that is not part of the SDF filter, and IDs are
// left to the caller.
func (fd *FlowDescription) Rules(base classify.Rule, uplink bool, ueIP netip.Addr) []classify.Rule {
	src, dst := &fd.From, &fd.To
	if fd.Out == uplink {
		src, dst = dst, src
	}
	base.SrcIP = endpointPrefix(src, ueIP)
	base.DstIP = endpointPrefix(dst, ueIP)
	if !fd.AnyProto {
		base.Has |= classify.FieldProto
		base.Proto = fd.Proto
	}
	srcPorts, dstPorts := portsOrAny(src.Ports), portsOrAny(dst.Ports)
	out := make([]classify.Rule, 0, len(srcPorts)*len(dstPorts))
	for _, sp := range srcPorts {
		for _, dp := range dstPorts {
			r := base
			if sp != nil {
				r.Has |= classify.FieldSrcPort
				r.SrcPort = *sp
			}
			if dp != nil {
				r.Has |= classify.FieldDstPort
				r.DstPort = *dp
			}
			out = append(out, r)
		}
	}
	return out
}

func portsOrAny(ps []classify.PortRange) []*classify.PortRange {
	if len(ps) == 0 {
		return []*classify.PortRange{nil}
	}
	out := make([]*classify.PortRange, len(ps))
	for i := range ps {
		out[i] = &ps[i]
	}
	return out
}

func endpointPrefix(ep *FlowEndpoint, ueIP netip.Addr) classify.Prefix {
	switch {
	case ep.Any:
		return classify.Prefix{}
	case ep.Assigned:
		if !ueIP.IsValid() {
			return classify.Prefix{}
		}
		return classify.PrefixFromNetip(netip.PrefixFrom(ueIP, ueIP.BitLen()))
	}
	return classify.PrefixFromNetip(ep.Prefix)
}
