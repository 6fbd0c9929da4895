package shmsbi

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/ops/opstest"
	"github.com/tern5g/tern/sbi/shm"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// BenchmarkCreateSMContext is one PostSmContexts over shared memory, both
// ends in this process.
func BenchmarkCreateSMContext(b *testing.B) {
	cfg := shm.Config{Dir: filepath.Join(b.TempDir(), "pool")}
	s, err := Listen(cfg, "nf", nil, opstest.NewProducer())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	k, err := Dial(cfg, "nf")
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	c := ops.NewClient(k, "")
	ctx := context.Background()
	req := &sbi.SMContextCreate{Data: wiretest.SmContextCreateData(), N1SmMsg: []byte{0x2e, 1, 1, 0xc1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CreateSMContext(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetAMF3GPPAccess is a small call: the binding's fixed cost.
func BenchmarkGetAMF3GPPAccess(b *testing.B) {
	cfg := shm.Config{Dir: filepath.Join(b.TempDir(), "pool")}
	s, err := Listen(cfg, "nf", nil, opstest.NewProducer())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	k, err := Dial(cfg, "nf")
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	c := ops.NewClient(k, "")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetAMF3GPPAccess(ctx, opstest.SUPI); err != nil {
			b.Fatal(err)
		}
	}
}
