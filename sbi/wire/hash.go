package wire

import (
	"encoding/binary"
	"math"
)

// formatVersion is the header's format byte; it enters every layout hash
// too. Bump it whenever the encoding of a kind changes.
const formatVersion = 1

// layoutHash is the layout version of a message whose root is p: FNV-1a
// 64 over the format version and p's plan (see "Versioning" in the package
// comment). Go type names are left out on purpose: only what decides the
// bytes on the wire is in.
func layoutHash(p *plan) uint64 {
	h := hasher{memo: make(map[*plan]uint64)}
	sub, _ := h.node(p)
	var b [9]byte
	b[0] = formatVersion
	binary.LittleEndian.PutUint64(b[1:], sub)
	return fnv64a(b[:])
}

// hasher hashes a plan bottom-up (a node hashes its children's hashes).
// A recursive type is hashed as a back-reference to the ancestor by
// distance; subtrees with no back-reference above themselves are memoized,
// which keeps wide models such as NFProfile (the same PlmnId in dozens of
// places) linear instead of exponential.
type hasher struct {
	stack []*plan
	memo  map[*plan]uint64
}

// node returns the hash of p's subtree and the stack depth of the
// shallowest ancestor a back-reference inside it points to
// (math.MaxInt: none).
func (h *hasher) node(p *plan) (uint64, int) {
	depth := len(h.stack)
	for i, q := range h.stack {
		if q == p {
			b := binary.AppendUvarint([]byte{'R'}, uint64(depth-i))
			return fnv64a(b), i
		}
	}
	if v, ok := h.memo[p]; ok {
		return v, math.MaxInt
	}
	h.stack = append(h.stack, p)
	buf := []byte{byte(p.op)}
	low := math.MaxInt
	child := func(c *plan) {
		v, r := h.node(c)
		buf = binary.LittleEndian.AppendUint64(buf, v)
		low = min(low, r)
	}
	switch p.op {
	case opByteArray:
		buf = binary.AppendUvarint(buf, uint64(p.len))
	case opArray:
		buf = binary.AppendUvarint(buf, uint64(p.len))
		child(p.elem)
	case opPtr, opSlice:
		child(p.elem)
	case opMap:
		child(p.key)
		child(p.elem)
	case opStruct:
		buf = binary.AppendUvarint(buf, uint64(len(p.fields)))
		for i, f := range p.fields {
			buf = binary.AppendUvarint(buf, uint64(len(p.names[i])))
			buf = append(buf, p.names[i]...)
			child(f.plan)
		}
	}
	h.stack = h.stack[:depth]
	v := fnv64a(buf)
	if low >= depth {
		h.memo[p] = v
	}
	return v, low
}

func fnv64a(b []byte) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	return h
}
