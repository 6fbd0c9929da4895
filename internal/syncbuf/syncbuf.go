// Package syncbuf is a buffer that many goroutines may write while
// another reads it: what a logger, or a command running in another
// goroutine or process, has written so far, for the tests that check it.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer guarded by a mutex. The zero value is empty
// and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Line returns the first line written so far that contains s, with its
// newline, or "" if none does.
func (b *Buffer) Line(s string) string {
	for line := range strings.Lines(b.String()) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
