package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/tern5g/tern/nas"
)

// TestDeregistrationWithBufferedDownlink: crossing procedures (issue 22
// §4): downlink arrives for an idle UE, the UPF buffers it and the AMF
// starts paging, and at once the network deregisters the UE. Whichever
// wins, every buffered packet is accounted for (delivered, or discarded
// with the session), and no context, session, TEID or buffer is left.
func TestDeregistrationWithBufferedDownlink(t *testing.T) {
	c := startCore(t, 1, nil)
	inject := downlinkInjector(c)
	g := dialIdleGNB(t, c, 1)
	u, _, _ := observedUE(t, g.GNB, "0000000001")
	ctx := context.Background()
	if err := u.Register(ctx); err != nil {
		t.Fatal(err)
	}
	s := establish(t, u)
	var delivered atomic.Int64
	if err := u.SetProbe(s.ID, receiverFunc(func([]byte) bool { delivered.Add(1); return true })); err != nil {
		t.Fatal(err)
	}
	deact := c.SMF.Stats().Deactivations
	if err := u.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the user plane deactivated", func() bool { return c.SMF.Stats().Deactivations > deact })
	const n = 20
	for i := range n {
		inject(s.Address, fmt.Appendf(nil, "dl-%03d", i))
	}
	if err := c.AMF.Deregister(ctx, u.SUPI(), nas.Cause5GSServicesNotAllowed, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the UE deregistered", func() bool { return c.AMF.Stats().UEContexts == 0 })
	st := waitIdle(t, c.Core)
	discarded := st.UPF.Pipeline.Drops["buffer-discarded"]
	if got := uint64(delivered.Load()) + discarded; got != n {
		t.Errorf("%d delivered + %d discarded with the session = %d, want all %d accounted for (drops %v)",
			delivered.Load(), discarded, got, n, st.UPF.Pipeline.Drops)
	}
	if st.AMF.PendingTransfers != 0 || st.UPF.Pipeline.BufferedBytes != 0 {
		t.Errorf("left behind: %d pending transfers, %d buffered bytes", st.AMF.PendingTransfers, st.UPF.Pipeline.BufferedBytes)
	}
}
