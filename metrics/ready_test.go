package metrics

import "testing"

// The reason /readyz gives is text an operator reads, the same at every
// request: each UPF by name, in order, never Go's map syntax.
func TestUPFsReadyReason(t *testing.T) {
	states := map[string]string{"upf-c": "down", "upf-a": "restoring", "upf-b": "down"}
	for range 20 { // map iteration order varies from one range to the next
		err := UPFsReady(states)
		if err == nil || err.Error() != "no UPF associated (upf-a restoring, upf-b down, upf-c down)" {
			t.Fatalf("reason %v", err)
		}
	}
	states["upf-b"] = "up"
	if err := UPFsReady(states); err != nil {
		t.Fatalf("one UPF up: %v", err)
	}
	if err := UPFsReady(nil); err == nil || err.Error() != "no UPF associated (none configured)" {
		t.Fatalf("no UPF: %v", err)
	}
}
