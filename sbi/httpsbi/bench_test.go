package httpsbi

import (
	"context"
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
