package wire

import (
	"fmt"
	"net/netip"
	"reflect"
	"unsafe"
)

// netipOps are the net/netip types with a layout: their fields are
// unexported, so the struct walk would see nothing in them. Each is
// encoded as a uvarint length and then its MarshalBinary form, which
// netip defines and validates on the way back: an Addr is 0 (the zero
// Addr), 4 or 16 bytes, an IPv6 zone after the 16; an AddrPort its Addr
// and the port (2 bytes, little-endian); a Prefix its Addr and the bits
// (1 byte).
var netipOps = map[reflect.Type]op{
	reflect.TypeFor[netip.Addr]():     opAddr,
	reflect.TypeFor[netip.AddrPort](): opAddrPort,
	reflect.TypeFor[netip.Prefix]():   opPrefix,
}

// maxNetip bounds an encoded netip value: 16 bytes, a zone, and a port or
// a prefix length; an IPv6 zone is an interface name (IFNAMSIZ) or index.
const maxNetip = 16 + 64 + 2

func appendNetip(b []byte, o op, ptr unsafe.Pointer) ([]byte, error) {
	at := len(b)
	b = append(b, 0) // the length: one byte, as maxNetip < 0x80
	switch o {
	case opAddr:
		b, _ = (*netip.Addr)(ptr).AppendBinary(b)
	case opAddrPort:
		b, _ = (*netip.AddrPort)(ptr).AppendBinary(b)
	case opPrefix:
		b, _ = (*netip.Prefix)(ptr).AppendBinary(b)
	}
	n := len(b) - at - 1
	if n > maxNetip {
		// netip.ParseAddr takes a zone of any length; the decoder would
		// refuse it, so the encoder does.
		return b[:at], &pathError{op: "encode", offset: -1, kind: ErrUnsupported,
			msg: fmt.Sprintf("a netip value of %d bytes (an IPv6 zone that long), over %d", n, maxNetip)}
	}
	b[at] = byte(n)
	return b, nil
}

func (d *decoder) netip(p *plan, ptr unsafe.Pointer) error {
	n, err := d.uvarintMax(p.name+" length", maxNetip)
	if err != nil {
		return err
	}
	if uint64(len(d.b)) < n {
		return d.fail("%s needs %d bytes, %d left", p.name, n, len(d.b))
	}
	body := d.b[:n]
	switch p.op {
	case opAddr:
		err = (*netip.Addr)(ptr).UnmarshalBinary(body)
	case opAddrPort:
		err = (*netip.AddrPort)(ptr).UnmarshalBinary(body)
	case opPrefix:
		pfx := (*netip.Prefix)(ptr)
		err = pfx.UnmarshalBinary(body)
		// netip takes a length past the address's bits and makes an
		// invalid Prefix of it; only the zero Prefix may be invalid.
		if err == nil && !pfx.IsValid() && *pfx != (netip.Prefix{}) {
			err = fmt.Errorf("prefix length %d past the address's bits", body[len(body)-1])
		}
	}
	if err != nil {
		return d.fail("%s: %v", p.name, err)
	}
	d.b = d.b[n:]
	return nil
}
