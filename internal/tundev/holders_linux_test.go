//go:build linux

package tundev

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

// TestHolders: a TUN device this process opened lists this process, and a
// name nobody holds lists nothing.
func TestHolders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: TUN")
	}
	name := fmt.Sprintf("ternhold%d", os.Getpid()%1000000)
	f, err := Open(name)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if !slices.ContainsFunc(Holders(name), func(h Holder) bool { return h.PID == os.Getpid() && h.Command != "" }) {
		t.Errorf("Holders(%s) = %+v; want this process, %d", name, Holders(name), os.Getpid())
	}
	if h := Holders(name + "x"); len(h) != 0 {
		t.Errorf("Holders of a device nobody holds: %+v", h)
	}
}
