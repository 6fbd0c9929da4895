package classify_test

import (
	"net/netip"

	"github.com/tern5g/tern/classify"
)

func netipPrefix(a classify.Addr, l int) netip.Prefix {
	na := a.Netip()
	if na.Is4() && l >= 96 {
		l -= 96
	} else if na.Is4() {
		na = netip.AddrFrom16(na.As16())
	}
	p, _ := na.Prefix(l)
	return p
}
