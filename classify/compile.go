package classify

// crule is the compiled form of a Rule that lookups test: one 64-byte
// cache line for the SDF 5-tuple, ToS and QFI, with the rarer PDI fields
// behind ext. Values are pre-masked.
type crule struct {
	rank             uint64
	src, dst         Addr
	sport, dport     PortRange
	srcLen, dstLen   uint8
	proto, protoMask uint8
	tos, tosMask     uint8
	qfi, qfiMask     uint8
	ext              *extMatch
}

// extMatch holds the PDI fields outside the 5-tuple; masks are 0 (any) or
// all ones.
type extMatch struct {
	ue                     Addr
	ueLen                  uint8
	srcIf, srcIfMask       uint8
	teid, teidMask         uint32
	netInst, netInstMask   uint32
	app, appMask           uint32
	spi, spiMask           uint32
	flowLabel, flowLblMask uint32
}

func compile(r *Rule) crule {
	c := crule{
		rank:   r.rank(),
		src:    r.SrcIP.Addr.masked(r.SrcIP.Len),
		dst:    r.DstIP.Addr.masked(r.DstIP.Len),
		srcLen: r.SrcIP.Len,
		dstLen: r.DstIP.Len,
		sport:  PortRange{0, 0xffff},
		dport:  PortRange{0, 0xffff},
	}
	has := r.Has
	if has&FieldSrcPort != 0 {
		c.sport = r.SrcPort
	}
	if has&FieldDstPort != 0 {
		c.dport = r.DstPort
	}
	if has&FieldProto != 0 {
		c.proto, c.protoMask = r.Proto, 0xff
	}
	if has&FieldToS != 0 {
		c.tos, c.tosMask = r.ToS&r.ToSMask, r.ToSMask
	}
	if has&FieldQFI != 0 {
		c.qfi, c.qfiMask = r.QFI, 0xff
	}
	const extFields = FieldSourceInterface | FieldTEID | FieldNetworkInstance | FieldAppID | FieldSPI | FieldFlowLabel
	if has&extFields != 0 || r.UEIP.Len != 0 {
		e := &extMatch{ue: r.UEIP.Addr.masked(r.UEIP.Len), ueLen: r.UEIP.Len}
		if has&FieldSourceInterface != 0 {
			e.srcIf, e.srcIfMask = r.SourceInterface, 0xff
		}
		if has&FieldTEID != 0 {
			e.teid, e.teidMask = r.TEID, ^uint32(0)
		}
		e.setOther(r)
		c.ext = e
	}
	return c
}

// otherFields are the rarely used fields extMatch holds beside the
// source interface, TEID and UE IP.
const otherFields = FieldNetworkInstance | FieldAppID | FieldSPI | FieldFlowLabel

// setOther fills in the otherFields that r constrains.
func (e *extMatch) setOther(r *Rule) {
	if r.Has&FieldNetworkInstance != 0 {
		e.netInst, e.netInstMask = r.NetworkInstance, ^uint32(0)
	}
	if r.Has&FieldAppID != 0 {
		e.app, e.appMask = r.AppID, ^uint32(0)
	}
	if r.Has&FieldSPI != 0 {
		e.spi, e.spiMask = r.SPI, ^uint32(0)
	}
	if r.Has&FieldFlowLabel != 0 {
		e.flowLabel, e.flowLblMask = r.FlowLabel, ^uint32(0)
	}
}

// match tests every field of the compiled rule; it must agree with
// Rule.Matches.
func (c *crule) match(h *Header) bool {
	if h.SrcPort-c.sport.Lo > c.sport.Hi-c.sport.Lo || h.DstPort-c.dport.Lo > c.dport.Hi-c.dport.Lo {
		return false
	}
	if h.Proto&c.protoMask != c.proto || h.ToS&c.tosMask != c.tos || h.QFI&c.qfiMask != c.qfi {
		return false
	}
	if !prefixMatch(h.SrcIP, c.src, c.srcLen) || !prefixMatch(h.DstIP, c.dst, c.dstLen) {
		return false
	}
	if c.ext != nil {
		return c.ext.match(h)
	}
	return true
}

func (e *extMatch) match(h *Header) bool {
	return h.TEID&e.teidMask == e.teid &&
		prefixMatch(h.UEIP, e.ue, e.ueLen) &&
		h.SourceInterface&e.srcIfMask == e.srcIf &&
		h.NetworkInstance&e.netInstMask == e.netInst &&
		h.AppID&e.appMask == e.app &&
		h.SPI&e.spiMask == e.spi &&
		h.FlowLabel&e.flowLblMask == e.flowLabel
}

// ruleBytes is the memory one compiled rule costs.
func ruleBytes(c *crule) int {
	n := 64
	if c.ext != nil {
		n += 64
	}
	return n
}
