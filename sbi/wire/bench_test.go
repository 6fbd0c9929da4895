package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// The four messages of a PDU session establishment, wire against
// encoding/json (what the HTTP binding spends); the package comment keeps
// the figures ("Cost"). Rerun with
//
//	go test ./sbi/wire -run '^$' -bench . -benchmem -count 5

func BenchmarkEncode(b *testing.B) {
	c, err := wire.New(wire.SBITypes()...)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range wiretest.Samples() {
		b.Run(s.Name+"/wire", func(b *testing.B) {
			buf, err := c.Append(nil, s.Value)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = c.Append(buf[:0], s.Value)
			}
		})
		b.Run(s.Name+"/json", func(b *testing.B) {
			buf, err := json.Marshal(s.Value)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = json.Marshal(s.Value)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	c, err := wire.New(wire.SBITypes()...)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range wiretest.Samples() {
		b.Run(s.Name+"/wire", func(b *testing.B) {
			buf, err := c.Append(nil, s.Value)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Decode(buf, s.New()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.Name+"/json", func(b *testing.B) {
			buf, err := json.Marshal(s.Value)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if err := json.Unmarshal(buf, s.New()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
