package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: writes from many goroutines all arrive, whole,
// while another goroutine reads (go test -race checks the guard).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "writer %d line %d\n", i, j)
				_ = b.Line("writer 0 line 99")
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
	if got := b.Line("writer 3 line 7\n"); got != "writer 3 line 7\n" {
		t.Fatalf("Line: %q", got)
	}
	if got := b.Line("absent"); got != "" {
		t.Fatalf("Line of nothing: %q", got)
	}
}
