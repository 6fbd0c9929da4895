package smf

import "net/netip"

// Protocol configuration options container identifiers (TS 24.008
// §10.5.6.3, Table 10.5.154) that tern answers in the extended PCO of a PDU
// Session Establishment Accept (TS 24.501 §9.11.4.6, same container format).
const (
	pcoDNSServerIPv4 = 0x000D // request (UE->network, empty) / address (network->UE)
	pcoIPv4LinkMTU   = 0x0010 // request / MTU (2 octets)
	pcoConfigOctet   = 0x80   // ext bit 1, configuration protocol 000 (PPP)
)

// pcoRequest is what the UE asked for in its extended PCO.
type pcoRequest struct {
	dns, mtu bool
}

// parsePCORequest reads the containers of a UE's extended PCO. A malformed
// PCO gives what was read before the fault: the options are best effort
// (TS 24.008 §10.5.6.3: the network ignores what it does not understand).
func parsePCORequest(b []byte) pcoRequest {
	var r pcoRequest
	if len(b) < 1 {
		return r
	}
	b = b[1:]
	for len(b) >= 3 {
		id := uint16(b[0])<<8 | uint16(b[1])
		n := int(b[2])
		if len(b) < 3+n {
			break
		}
		switch id {
		case pcoDNSServerIPv4:
			r.dns = true
		case pcoIPv4LinkMTU:
			r.mtu = true
		}
		b = b[3+n:]
	}
	return r
}

// buildPCOResponse answers r with the DNN's DNS servers and MTU; nil when
// nothing was asked.
func buildPCOResponse(r pcoRequest, dns []netip.Addr, mtu uint16) []byte {
	if !r.dns && !r.mtu {
		return nil
	}
	out := []byte{pcoConfigOctet}
	if r.dns {
		for _, a := range dns {
			b := a.As4()
			out = append(out, pcoDNSServerIPv4>>8, pcoDNSServerIPv4&0xff, 4, b[0], b[1], b[2], b[3])
		}
	}
	if r.mtu {
		out = append(out, pcoIPv4LinkMTU>>8, pcoIPv4LinkMTU&0xff, 2, byte(mtu>>8), byte(mtu))
	}
	return out
}
