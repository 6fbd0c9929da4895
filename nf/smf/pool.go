package smf

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"sync"
)

// ipPool hands out the IPv4 addresses of one DNN's prefix (TS 23.501
// §5.8.2.2: the SMF allocates the UE IP address). It is a bitmap with a
// next-fit cursor, so a released address is reused only after the rest of
// the pool has been cycled through (stale downlink packets for a released
// UE then rarely reach its successor).
//
// The network address, the first host (left to the UPF's N6 gateway, the
// Open5GS convention) and the broadcast address are never handed out.
type ipPool struct {
	prefix netip.Prefix
	base   uint32 // first address of the prefix
	size   uint32 // addresses in the prefix

	mu    sync.Mutex
	used  []uint64 // bit i = base+i allocated (or reserved)
	next  uint32   // next-fit cursor
	inUse int      // allocated, reserved ones excluded
}

func newIPPool(p netip.Prefix) (*ipPool, error) {
	p = p.Masked()
	if !p.Addr().Is4() {
		return nil, fmt.Errorf("%s is not IPv4", p)
	}
	if p.Bits() > 30 || p.Bits() < 8 {
		return nil, fmt.Errorf("%s: prefix length %d not in 8..30", p, p.Bits())
	}
	a := p.Addr().As4()
	pool := &ipPool{
		prefix: p,
		base:   binary.BigEndian.Uint32(a[:]),
		size:   1 << (32 - p.Bits()),
	}
	pool.used = make([]uint64, (pool.size+63)/64)
	for _, i := range []uint32{0, 1, pool.size - 1} {
		pool.used[i/64] |= 1 << (i % 64)
	}
	pool.next = 2
	return pool, nil
}

// capacity is how many addresses can be allocated.
func (p *ipPool) capacity() int { return int(p.size) - 3 }

// allocate returns a free address, or false when the pool is exhausted.
func (p *ipPool) allocate() (netip.Addr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse >= p.capacity() {
		return netip.Addr{}, false
	}
	words := uint32(len(p.used))
	w := p.next / 64
	// Bits below the cursor in its word count as taken on the first pass.
	mask := ^uint64(0) << (p.next % 64)
	for n := uint32(0); n <= words; n++ {
		free := ^p.used[w] & mask
		if free != 0 {
			i := w*64 + uint32(bits.TrailingZeros64(free))
			if i < p.size {
				p.used[w] |= 1 << (i % 64)
				p.inUse++
				p.next = (i + 1) % p.size
				var b [4]byte
				binary.BigEndian.PutUint32(b[:], p.base+i)
				return netip.AddrFrom4(b), true
			}
		}
		w = (w + 1) % words
		mask = ^uint64(0)
	}
	return netip.Addr{}, false // unreachable while inUse is right
}

// index is a's bit, and whether a is an address the pool hands out.
func (p *ipPool) index(a netip.Addr) (uint32, bool) {
	if !a.Is4() || !p.prefix.Contains(a) {
		return 0, false
	}
	b := a.As4()
	i := binary.BigEndian.Uint32(b[:]) - p.base
	return i, i > 1 && i != p.size-1
}

// release frees a; it reports false for an address that was not allocated.
func (p *ipPool) release(a netip.Addr) bool { return p.mark(a, false) }

// allocated is the number of addresses handed out.
func (p *ipPool) allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse
}

// reserve allocates a, an address a restored session or deletion holds
// (record.go); false when the pool does not hand a out or has already.
func (p *ipPool) reserve(a netip.Addr) bool { return p.mark(a, true) }

// mark sets a's bit (allocated) or clears it (free); false when the pool
// does not hand a out or a already was so.
func (p *ipPool) mark(a netip.Addr, allocated bool) bool {
	i, ok := p.index(a)
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	bit := uint64(1) << (i % 64)
	if (p.used[i/64]&bit != 0) == allocated {
		return false
	}
	p.used[i/64] ^= bit
	if allocated {
		p.inUse++
	} else {
		p.inUse--
	}
	return true
}

// cursor is the address the next allocation tries first.
func (p *ipPool) cursor() netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], p.base+p.next)
	return netip.AddrFrom4(b)
}

// setCursor has the next allocation try a first; false when a is not in
// the prefix.
func (p *ipPool) setCursor(a netip.Addr) bool {
	if !a.Is4() || !p.prefix.Contains(a) {
		return false
	}
	b := a.As4()
	p.mu.Lock()
	p.next = binary.BigEndian.Uint32(b[:]) - p.base
	p.mu.Unlock()
	return true
}
