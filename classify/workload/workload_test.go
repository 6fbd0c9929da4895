package workload_test

import (
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/workload"
)

func TestWorkloadsAgreeAndHit(t *testing.T) {
	ws := []workload.Workload{
		workload.Session(2, 1), workload.Session(4, 2), workload.Session(100, 3),
		workload.HomeGateway(300, 4), workload.Sessions(2000, 5),
	}
	for _, w := range ws {
		lin, err := classify.NewLinear(w.Rules)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		var cs []classify.Classifier
		for _, k := range classify.Kinds[1:] {
			c, err := classify.Build(k, w.Rules)
			if err != nil {
				t.Fatalf("%s %s: %v", w.Name, k, err)
			}
			cs = append(cs, c)
		}
		trace := w.Trace[:3000]
		for i := range trace {
			want, ok := lin.Lookup(&trace[i])
			if !ok {
				t.Fatalf("%s: header %d matches nothing, but was drawn from a rule", w.Name, i)
			}
			for _, c := range cs {
				if got, gok := c.Lookup(&trace[i]); got != want || !gok {
					t.Fatalf("%s: %s got %d,%v; linear %d", w.Name, c.Name(), got, gok, want)
				}
			}
		}
	}
}

func TestSizes(t *testing.T) {
	if n := len(workload.Session(2, 1).Rules); n != 2 {
		t.Errorf("Session(2): %d rules", n)
	}
	if n := len(workload.Session(100, 1).Rules); n != 100 {
		t.Errorf("Session(100): %d rules", n)
	}
	if n := len(workload.HomeGateway(300, 1).Rules); n != 300 {
		t.Errorf("HomeGateway(300): %d rules", n)
	}
}
