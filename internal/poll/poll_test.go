package poll

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			time.Sleep(time.Millisecond)
			n.Add(1)
		}
	}()
	if err := Until(context.Background(), 5*time.Second, 100*time.Microsecond, func() bool { return n.Load() == 3 }); err != nil {
		t.Fatal(err)
	}
	if err := Until(context.Background(), 2*time.Millisecond, time.Millisecond, func() bool { return false }); !errors.Is(err, ErrTimeout) {
		t.Errorf("never true: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Until(ctx, time.Second, time.Millisecond, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
