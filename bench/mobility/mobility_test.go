package mobility

import (
	"context"
	"testing"
	"time"
)

// TestPagingRuns runs a small paging experiment end to end: the windows
// are measured, and every packet of the stream arrives, in order.
func TestPagingRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a core")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Paging(ctx, PagingConfig{Trials: 3, Concurrency: []int{4}, Rounds: 2, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failures != 0 || len(res.Unit) != 3 || len(res.Full) != 3 || len(res.Concurrent[4]) != 2 {
		t.Fatalf("failures %d, %d unit windows, %d full, concurrent %v", res.Failures, len(res.Unit), len(res.Full), res.Concurrent)
	}
	if res.DL.Sent == 0 || res.DL.Lost != 0 || res.DL.Reordered != 0 {
		t.Errorf("downlink over the trials: %+v", res.DL)
	}
	t.Logf("unit %v, full %v, baseline %v, concurrent %v, DL sent %d delayed %d", res.Unit, res.Full, res.Baseline, res.Concurrent, res.DL.Sent, res.DL.Delayed)
}
