package amf

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
)

// Every AMF test logs through dupKeyHandler (testLogger), at debug level so
// that every log call is formatted: a record whose key repeats one the
// logger already carries (e.g. "supi" on a UE's logger, which has it from
// the moment the SUPI is known) is collected, and TestMain fails the run.
var (
	dupMu   sync.Mutex
	dupKeys []string
)

type dupKeyHandler struct {
	inner slog.Handler
	keys  []string // from WithAttrs
}

func (h *dupKeyHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *dupKeyHandler) Handle(ctx context.Context, r slog.Record) error {
	keys := slices.Clone(h.keys)
	r.Attrs(func(a slog.Attr) bool {
		if slices.Contains(keys, a.Key) {
			dupMu.Lock()
			dupKeys = append(dupKeys, fmt.Sprintf("%q: key %q twice", r.Message, a.Key))
			dupMu.Unlock()
		}
		keys = append(keys, a.Key)
		return true
	})
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h *dupKeyHandler) WithAttrs(as []slog.Attr) slog.Handler {
	keys := slices.Clone(h.keys)
	for _, a := range as {
		keys = append(keys, a.Key)
	}
	return &dupKeyHandler{inner: h.inner.WithAttrs(as), keys: keys}
}

func (h *dupKeyHandler) WithGroup(name string) slog.Handler {
	return &dupKeyHandler{inner: h.inner.WithGroup(name)} // a group starts a new key space
}

func TestMain(m *testing.M) {
	code := m.Run()
	dupMu.Lock()
	if len(dupKeys) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "log records with a duplicated key (%d), e.g. %s\n", len(dupKeys), dupKeys[0])
		code = 1
	}
	dupMu.Unlock()
	os.Exit(code)
}

func newTestLogHandler() slog.Handler {
	if os.Getenv("AMF_TEST_LOG") != "" {
		return &dupKeyHandler{inner: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})}
	}
	return &dupKeyHandler{inner: slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1})}
}
