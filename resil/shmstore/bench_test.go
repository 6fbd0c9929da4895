package shmstore

import (
	"fmt"
	"testing"
)

// The benchmarks' workload: 1,000 objects with 1 KiB records (about an AMF
// UE record), replaced in turn, in a 64 MiB store on /dev/shm.
const (
	benchKeys = 1000
	benchRec  = 1024
	benchSize = 64 << 20
)

func benchKeyset() [][]byte {
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "imsi-00101%010d", i)
	}
	return keys
}

// BenchmarkPut: one Put of a 1 KiB record replacing an earlier one, and,
// as the reference in the same run, a plain copy of the same 1 KiB into a
// []byte of the store's size. The store's figures include its share of
// compactions (compactions/op).
func BenchmarkPut(b *testing.B) {
	keys := benchKeyset()
	rec := make([]byte, benchRec)
	for i := range rec {
		rec[i] = byte(i)
	}
	b.Run("store", func(b *testing.B) {
		w, _ := newStore(b, benchSize, 1)
		for _, k := range keys {
			if err := w.Put(1, k, rec); err != nil {
				b.Fatal(err)
			}
		}
		before := w.Stats()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := w.Put(1, keys[i%benchKeys], rec); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(w.Stats().Compactions-before.Compactions)/float64(b.N), "compactions/op")
	})
	b.Run("memcpy", func(b *testing.B) {
		dst := make([]byte, benchSize)
		b.ReportAllocs()
		off := 0
		for b.Loop() {
			if off+benchRec > len(dst) {
				off = 0
			}
			copy(dst[off:], rec)
			off += benchRec
		}
	})
	b.Run("store-parallel", func(b *testing.B) {
		w, _ := newStore(b, benchSize, 1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if err := w.Put(1, keys[i%benchKeys], rec); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}

// BenchmarkCompaction: Puts into a store whose halves hold the 1,000 live
// 1 KiB records and at most a few entries more, so that every few Puts
// compact; ns/compaction is the time per compaction (the Puts between
// included, which cost little beside it).
func BenchmarkCompaction(b *testing.B) {
	keys := benchKeyset()
	rec := make([]byte, benchRec)
	entry := entryHeader + len(keys[0]) + benchRec
	w, _ := newStore(b, headerBytes+2*((benchKeys+1)*entry+halfAlign), 1)
	for _, k := range keys {
		if err := w.Put(1, k, rec); err != nil {
			b.Fatal(err)
		}
	}
	before := w.Stats()
	i := 0
	for b.Loop() {
		if err := w.Put(1, keys[i%benchKeys], rec); err != nil {
			b.Fatal(err)
		}
		i++
	}
	st := w.Stats()
	n := st.Compactions - before.Compactions
	if n == 0 {
		return // b.N too small to compact
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/compaction")
	b.ReportMetric(float64(st.LiveBytes), "live-bytes")
	b.ReportMetric(float64(n)/float64(b.N), "compactions/op")
}

// TestPutAllocates0: a Put or Delete of a key that exists allocates
// nothing, compactions included.
func TestPutAllocates0(t *testing.T) {
	w, _ := newStore(t, 1<<20, 1)
	keys := benchKeyset()[:100]
	rec := make([]byte, benchRec)
	for _, k := range keys {
		if err := w.Put(1, k, rec); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	if n := testing.AllocsPerRun(5000, func() {
		if err := w.Put(1, keys[i%len(keys)], rec); err != nil {
			t.Fatal(err)
		}
		i++
	}); n != 0 {
		t.Fatalf("Put: %v allocations per call", n)
	}
	if w.Stats().Compactions == 0 {
		t.Fatal("no compaction in the measure")
	}
}
