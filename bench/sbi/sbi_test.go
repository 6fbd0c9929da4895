package sbi

import (
	"context"
	"testing"
)

// A short run produces every row it promises, with no failed call.
func TestRunProducesEveryRow(t *testing.T) {
	doc, err := Run(context.Background(), Config{Calls: 20, UEs: []int{4}, Bindings: []Binding{Inproc(), HTTP(), HTTPS()}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, r := range doc.Results {
		if r.Failures != 0 || r.Median <= 0 {
			t.Errorf("%s/%s: %d failures, median %v", r.Name, r.Variant, r.Failures, r.Median)
		}
		rows[r.Name+"/"+r.Variant] = true
	}
	for _, op := range Operations {
		for _, b := range []string{"inproc", "http", "https"} {
			if !rows[op+"/"+b] {
				t.Errorf("no %s/%s row", op, b)
			}
		}
	}
	for _, want := range []string{"rtt/tcp-rtt", "rtt/h2c-rtt", "serialize/json", "serialize/shm", "registration/inproc", "pdu-session/http"} {
		if !rows[want] {
			t.Errorf("no %s row", want)
		}
	}
}
