package pfcp

import (
	"context"
	"testing"
)

// A short run reports every message per binding and the UDP reference,
// with no failure.
func TestRunProducesEveryRow(t *testing.T) {
	doc, err := Run(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, r := range doc.Results {
		if r.Failures != 0 || r.Count == 0 {
			t.Errorf("%s/%s: %d of %d failed", r.Name, r.Variant, r.Failures, r.Count+r.Failures)
		}
		rows[r.Name+"/"+r.Variant] = true
	}
	for _, m := range Messages {
		for _, b := range []string{"direct", "udp"} {
			if !rows[m+"/"+b] {
				t.Errorf("no %s/%s row", m, b)
			}
		}
	}
	if !rows["rtt/udp-rtt"] {
		t.Error("no rtt/udp-rtt row")
	}
}
