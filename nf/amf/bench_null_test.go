package amf

import "testing"

// BenchmarkRegistrationDeregistrationNullSink is the same with a RecordSink
// that does nothing: the price of taking, encoding and comparing the
// records and of output commit (holding each step's NGAP messages until
// its record is handed over), without the sink's own work.
func BenchmarkRegistrationDeregistrationNullSink(b *testing.B) {
	benchmarkRegistrationDeregistration(b, nullSink{})
}

type nullSink struct{}

func (nullSink) UERecord(*UERecord, []byte) {}
