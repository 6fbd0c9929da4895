package engine

import (
	"os/exec"
	"testing"
)

// TestEngineCmpBuilds vets bench/enginecmp, the engine comparison that is
// a module of its own (so that etcd is no dependency of tern's) and that
// `go test ./...` does not enter: a change here that breaks it fails here.
func TestEngineCmpBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds etcd: slow the first time")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH to build bench/enginecmp")
	}
	cmd := exec.Command(goCmd, "vet", ".")
	cmd.Dir = "../../bench/enginecmp"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet in bench/enginecmp: %v\n%s", err, out)
	}
}
