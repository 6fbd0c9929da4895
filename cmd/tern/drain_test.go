package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/core"
)

func TestDrainCommand(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "op.sock")
	drained := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /unit/drain", func(w http.ResponseWriter, r *http.Request) {
		drained++
		w.WriteHeader(http.StatusAccepted)
	})
	op, err := core.ServeOperator(sock, mux, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := drainCommand([]string{"--socket", sock}, &out); err != nil {
		t.Fatal(err)
	}
	if drained != 1 || !strings.Contains(out.String(), "standby unit takes over") {
		t.Fatalf("drained %d times, printed %q", drained, out.String())
	}
	op.Close()

	// A core that is no unit (tern up without resiliency) says so.
	sock = filepath.Join(t.TempDir(), "op.sock")
	op, err = core.ServeOperator(sock, http.NewServeMux(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	err = drainCommand([]string{"--socket", sock}, &out)
	if err == nil || !strings.Contains(err.Error(), "resiliency.mode local") {
		t.Fatalf("drain of a plain core: %v", err)
	}
}
