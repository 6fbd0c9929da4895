package ngap

import (
	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
)

// rawIE is one ProtocolIE-Field of an NGAP message value: its id and the
// contents of its open type value.
type rawIE struct {
	id    int64
	value []byte
	field []byte // the whole field: id, criticality, length, value
}

// lengthDet reads an aligned-PER length determinant (X.691 §11.9) at b[i]
// and returns the range of the contents it announces. Fragmented lengths
// (16K and more) are not needed for the IEs tern salvages.
func lengthDet(b []byte, i int) (start, end int, ok bool) {
	if i >= len(b) {
		return 0, 0, false
	}
	switch c := b[i]; {
	case c&0x80 == 0:
		start, end = i+1, i+1+int(c)
	case c&0xC0 == 0x80 && i+1 < len(b):
		start, end = i+2, i+2+(int(c&0x3F)<<8|int(b[i+1]))
	default:
		return 0, 0, false
	}
	return start, end, true
}

// walkIEs lists the protocol IEs of a message value, given rest, the open
// type that follows the NGAP-PDU header, as far as rest holds whole IEs. It
// reads only the APER framing of the ProtocolIE-Container (extensible
// SEQUENCE preamble, 16-bit count, then id, criticality and open type per
// field), so it gets through PDUs that free5gc rejects, e.g. truncated ones.
func walkIEs(rest []byte) []rawIE {
	s, e, ok := lengthDet(rest, 0)
	if !ok {
		return nil
	}
	v := rest[s:min(e, len(rest))]
	if len(v) < 3 {
		return nil
	}
	n := int(v[1])<<8 | int(v[2])
	var ies []rawIE
	for i := 3; len(ies) < n && i+3 <= len(v); {
		id := int64(v[i])<<8 | int64(v[i+1])
		s, e, ok := lengthDet(v, i+3) // after id (2 octets) and criticality (1)
		if !ok || e > len(v) {
			break
		}
		ies = append(ies, rawIE{id: id, value: v[s:e], field: v[i:e]})
		i = e
	}
	return ies
}

// salvageIDs reads the UE NGAP IDs straight from the IE framing when
// free5gc could not decode the message, so that the Error Indication can
// still name the UE (TS 38.413 §10.1).
func (e *DecodeError) salvageIDs(rest []byte) {
	defer func() { _ = recover() }() // error path: a panic only loses the IDs
	for _, x := range walkIEs(rest) {
		pd := aper.NewPerBitData(x.value)
		switch x.id {
		case ie.ProtocolIEIDAMFUENGAPID, ie.ProtocolIEIDSourceAMFUENGAPID:
			var id ie.AMFUENGAPID
			if id.Read(pd) == nil && e.AMFUENGAPID == nil {
				e.AMFUENGAPID = &id.Value
			}
		case ie.ProtocolIEIDRANUENGAPID:
			var id ie.RANUENGAPID
			if id.Read(pd) == nil && e.RANUENGAPID == nil {
				e.RANUENGAPID = &id.Value
			}
		}
	}
}
