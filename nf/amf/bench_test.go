package amf

import (
	"fmt"
	"testing"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

// BenchmarkRegistrationDeregistration runs one UE's full initial
// registration and deregistration per iteration through the AMF over an
// in-memory association. The time includes the test UE's own NAS/USIM work
// and the fake home network's Milenage, so it bounds the AMF's cost from
// above. Run with -benchmem for allocations.
func BenchmarkRegistrationDeregistration(b *testing.B) {
	benchmarkRegistrationDeregistration(b, nil)
}

// BenchmarkRegistrationDeregistrationRecorded is the same with a
// RecordSink that copies every record's encoding, as a record store does
// (record.go): the price of the deltas.
func BenchmarkRegistrationDeregistrationRecorded(b *testing.B) {
	benchmarkRegistrationDeregistration(b, &copyingSink{})
}

// copyingSink copies each record's encoding into memory of its own.
type copyingSink struct{ buf []byte }

func (s *copyingSink) UERecord(_ *UERecord, enc []byte) { s.buf = append(s.buf[:0], enc...) }

func benchmarkRegistrationDeregistration(b *testing.B, sink RecordSink) {
	hn := newFakeHN()
	a, err := New(testConfig(), hn.deps(), nil)
	if err != nil {
		b.Fatal(err)
	}
	a.SetRecordSink(sink)
	b.Cleanup(func() { a.Close() })
	g := setupGNB(b, a)
	ues := make([]*testUE, 64)
	for i := range ues {
		ues[i] = newTestUE(b, g, hn, fmt.Sprintf("%010d", i+1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u := ues[i%len(ues)]
		u.register()
		u.sendUL(&nas.DeregistrationRequestUEOriginating{SwitchOff: true, AccessType: nas.Access3GPP,
			NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
		u.releaseComplete(expect[*ngap.UEContextReleaseCommand](b, u.recvNGAP()))
	}
}
