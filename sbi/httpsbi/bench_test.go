package httpsbi

import (
	"context"
	"net/http"
	"testing"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/ops/opstest"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// BenchmarkCreateSMContext is one PostSmContexts over h2c on loopback.
func BenchmarkCreateSMContext(b *testing.B) {
	root, hc := startH2C(&testing.T{}, NewHandler(nil, opstest.NewProducer()))
	c := ops.NewClient(NewCaller(hc, root), "")
	ctx := context.Background()
	req := &sbi.SMContextCreate{Data: wiretest.SmContextCreateData(), N1SmMsg: []byte{0x2e, 1, 1, 0xc1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CreateSMContext(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawH2C is the floor: an empty GET over net/http's h2c, no
// binding code at all.
func BenchmarkRawH2C(b *testing.B) {
	root, hc := startH2C(&testing.T{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	b.ReportAllocs()
	for b.Loop() {
		res, err := hc.Get(root + "/x")
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
}

// BenchmarkGetAMF3GPPAccess is a GET with a small JSON answer.
func BenchmarkGetAMF3GPPAccess(b *testing.B) {
	root, hc := startH2C(&testing.T{}, NewHandler(nil, opstest.NewProducer()))
	c := ops.NewClient(NewCaller(hc, root), "")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetAMF3GPPAccess(ctx, opstest.SUPI); err != nil {
			b.Fatal(err)
		}
	}
}
