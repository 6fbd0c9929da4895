package upf

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/tern5g/tern/lab"
)

// TestSmoke runs a very short benchmark: generator, bare-xdp, kernel and
// portable, 1 session, 64 B uplink.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds namespaces; skipped with -short")
	}
	if err := Check(); err != nil {
		t.Skip(err)
	}
	if err := lab.Check(); err != nil {
		t.Skip(err)
	}
	out := io.Discard
	if testing.Verbose() {
		out = os.Stdout
	}
	rep, err := Run(context.Background(), Config{
		Duration: 200 * time.Millisecond, Sizes: []int{64}, Sessions: []int{1}, Directions: []string{Uplink},
		Drivers: []string{BareXDP, Kernel, "portable"}, Repeat: 1, Sweep: 1, SweepDuration: 100 * time.Millisecond,
		Drain: 50 * time.Millisecond, Out: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep.WriteTable(out)
	t.Logf("%+v", rep.Skipped)
}
