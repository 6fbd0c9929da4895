// Package wire is a fixed, versioned binary layout for the values that
// tern's SBI interfaces (package sbi) pass between NFs: the
// github.com/free5gc/openapi models and tern's own structs such as
// sbi.SMContextCreate. The shared-memory binding uses it instead of JSON.
// Both ends are tern processes, so the layout carries no field names or
// tags: sender and receiver walk the same Go type in the same order, and a
// layout hash in the header proves that they do.
//
// # API
//
// A Codec holds the compiled plans (one per Go type, built once with
// reflect and cached in a sync.Map; encoding then follows field offsets,
// with no look-up by name) and the fixed registry of concrete types that
// may travel inside interface fields. New(types...) builds one; SBITypes
// lists the types tern puts in interface fields (the 5G-AKA vector in
// Ausf_UEAU_UEAuthenticationCtx.Var5gAuthData). The package-level Append
// and Decode use a Codec built once from SBITypes. A Codec is safe for
// concurrent use.
//
// Append(dst, &v) appends the message for v to dst, without allocating
// when dst has room. Decode(msg, &v) fills v. v is always a non-nil
// pointer: the message is the value it points to. LayoutHash gives the
// hash a binding can compare with its peer's once, at connection time.
//
// # Layout
//
// A message is an 11-byte header and one value, with nothing after it:
//
//	header     't' 'w', format version (1), layout hash (8 bytes, little-endian)
//
// A value is encoded by its Go kind:
//
//	bool           1 byte, 0 or 1
//	int8, uint8    1 byte
//	other ints     varint as encoding/binary writes it: zigzag for signed
//	               kinds, plain for unsigned ones
//	float32/64     4/8 bytes, the IEEE 754 bits little-endian
//	string         uvarint length, then the bytes
//	[]byte         uvarint length+1 (0: nil), then the bytes
//	[N]byte        N bytes
//	pointer        1 byte: 0 nil, 1 the pointee follows
//	slice          uvarint length+1 (0: nil), then the elements
//	array          the N elements
//	map            uvarint count+1 (0: nil), then key, value, ... in
//	               iteration order (two encodings of one map may differ)
//	struct         a presence bitmap of ceil(n/8) bytes for its n exported
//	               fields (bit i&7 of byte i/8 for field i, in declaration
//	               order), then the present fields in order. A field is
//	               present unless its memory is all zero bytes, so "", 0,
//	               false, nil and the zero Time cost nothing, and a
//	               decoded absent field is bit for bit what was sent
//	time.Time      1 zone byte: 0 the zero Time (nothing follows), 1 UTC,
//	               2 a fixed offset (zigzag varint seconds east of UTC
//	               follows); then zigzag varint Unix seconds and uvarint
//	               nanoseconds
//	netip.Addr,    uvarint length (at most 82), then netip's binary form
//	AddrPort,      (MarshalBinary: the Addr's 0, 4 or 16 bytes and IPv6
//	Prefix         zone; then a 2-byte little-endian port, or a 1-byte
//	               prefix length), which the decoder checks as netip does
//	               and refuses a prefix length past the address's bits
//	interface      1 tag byte: 0 nil; 1 bool (1 byte); 2 float64 (8 bytes);
//	               3 string; 4 []any (uvarint count+1, tagged elements);
//	               5 map[string]any (uvarint count+1, string key and tagged
//	               value pairs); 6 a registered type: its ID (8 bytes, the
//	               FNV-1a hash of its name, e.g.
//	               "github.com/free5gc/openapi/models.Ausf_UEAU_Av5gAka"),
//	               its layout hash (8 bytes), then the value
//
// Tags 1-5 are the values encoding/json puts in interface{} fields (what
// the HTTP binding hands over); anything else must be registered with New,
// and registering T registers *T too. Chan, func, complex and
// unsafe.Pointer have no layout, nor have map keys holding an interface.
//
// # Versioning
//
// The layout hash is FNV-1a 64 over the format version and the type's
// plan: every field name, every kind and integer width, array lengths, and
// the nesting (a recursive type refers back by depth). Adding, removing,
// renaming, reordering or retyping an exported field anywhere reachable
// from the type changes it; Go type names and unexported fields do not
// enter it, so structurally identical types may decode each other's
// messages. Decode refuses a message whose hash is not that of the type it
// decodes into with ErrLayoutMismatch: two processes built from different
// model versions refuse each other's messages instead of misreading them.
// A value in an interface carries its own type's hash, checked the same
// way, and a registered type the decoder does not know is a mismatch too.
// Changing how this package encodes a kind bumps the format version byte.
//
// # Safety
//
// The input of Decode is untrusted (another process wrote it into shared
// memory):
//   - Decode never panics; FuzzDecode checks this, with seeds from real
//     encodings that every go test runs.
//   - Every length and count is checked against the bytes left, times the
//     fewest bytes one element takes, before anything is allocated; a
//     pointee is allocated only when the bytes left can hold its
//     encoding. On top of that a budget caps what one Decode allocates at
//     1 MiB + 64 bytes per message byte, which also bounds what a few
//     bytes may ask for legitimately (a slice of big structs whose fields
//     are all absent).
//   - Nesting deeper than MaxDepth composite values (struct, pointer,
//     slice, array, map, interface) is refused on both sides: it bounds
//     the decoder's stack and stops the encoder on a cyclic value.
//   - Trailing bytes, a bool other than 0 or 1, a varint too long or out
//     of its field's range, a bitmap bit past the last field, nanoseconds
//     of 1e9 or more, an unknown tag, a duplicate map key and a value in
//     a non-empty interface that does not implement it are errors.
//   - Errors wrap ErrMalformed, ErrLayoutMismatch or ErrUnsupported and
//     say what was wrong, where (the field path, e.g.
//     Smf_PDUSess_SmContextCreateData.Guami.PlmnId.Mcc) and at which byte.
//
// # Normalisation
//
// A round trip keeps every exported field (reflect.DeepEqual holds) except
// that a time.Time loses its monotonic clock reading and its zone name: an
// offset of 0 decodes as UTC, any other as time.FixedZone("", offset), so
// compare times with Equal. Decode zeroes the target first, so unexported
// fields (never encoded) end up zero, and it allocates new maps, slices
// and pointees rather than reusing what the target held. Decoded strings
// and byte slices share one copy of the message body (one allocation
// instead of one per field); Decode keeps no reference to msg, so shared
// memory may be reused at once, but any decoded string keeps that copy
// alive. If Decode fails, the target may be partly written.
//
// # Cost
//
// BenchmarkEncode and BenchmarkDecode against encoding/json on the four
// messages of wiretest.Samples (a PDU session establishment as tern's AMF
// and SMF fill them), medians of 5 runs on a shared 2-core AMD EPYC VM;
// decoding counts allocating the target, for both:
//
//	message              bytes      encode ns    decode ns     decode allocs
//	                     wire/json  wire/json    wire/json     wire/json
//	AuthenticationInfo    80/106      51/290      350/1540      2/7
//	SmContextCreateData  332/682     496/2417    2500/10800    13/45
//	SmContextUpdateData   90/225     259/1474    1760/6160      9/26
//	SmPolicyContextData  143/371     258/1566    1510/4920      6/24
//
// Encoding allocates nothing (JSON: its output). Decoding allocates the
// target, the copy of the body and one object per non-nil pointer, slice
// and map; on that loaded machine its time is mostly the allocator's and
// the garbage collector's.
package wire
