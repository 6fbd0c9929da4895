package smf

import (
	"context"
	"testing"

	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// nullRecorder takes records and does nothing with them.
type nullRecorder struct{}

func (nullRecorder) RecordedUE(*UERecord)   {}
func (nullRecorder) RecordedUPF(*UPFRecord) {}

func (nullRecorder) RecordedAllocators(*AllocatorRecord) {}

// BenchmarkEstablishReleaseNullRecorder is BenchmarkEstablishRelease with
// a Recorder that does nothing: the price of taking the records and of
// output commit (holding each step's messages to the AMF and its SBI
// answer until its record is handed over).
func BenchmarkEstablishReleaseNullRecorder(b *testing.B) {
	amf := newFakeAMF(b)
	p, err := pcf.New(pcf.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(testConfig(), Deps{AMF: amf, AMFStatus: amf, SDM: &fakeSDM{}, PCF: p,
		UPFs: map[string]pfcp.UserPlane{"upf1": newFakeUPF()}, Recorder: nullRecorder{}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	p.SetNotifier(s)
	amf.smf = s
	b.Cleanup(func() { s.Close() })
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	h := &harness{smf: s, amf: amf, pcf: p}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ref, _, _ := h.establish(b, testSUPI, 1, "internet")
		if err := s.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{}); err != nil {
			b.Fatal(err)
		}
	}
}
