package shardmap

import (
	"sync"
	"testing"
)

func TestMap(t *testing.T) {
	type v struct{ n int }
	m := New[string, *v](HashString)
	a, b := &v{1}, &v{2}
	if !m.InsertNew("x", a) || m.InsertNew("x", b) || m.Get("x") != a {
		t.Fatal("InsertNew")
	}
	if old := m.Swap("x", b); old != a || m.Get("x") != b {
		t.Fatal("Swap")
	}
	m.CompareAndDelete("x", a) // stale owner: no effect
	if m.Get("x") != b {
		t.Fatal("CompareAndDelete removed a newer value")
	}
	m.CompareAndDelete("x", b)
	if m.Get("x") != nil || m.Len() != 0 {
		t.Fatal("CompareAndDelete")
	}
	if got := m.GetOrCreate("y", func() *v { return a }); got != a || m.GetOrCreate("y", func() *v { return b }) != a {
		t.Fatal("GetOrCreate")
	}
	m.DeleteIf("y", func(x *v) bool { return x.n == 2 })
	if m.Len() != 1 {
		t.Fatal("DeleteIf dropped a value it should keep")
	}
	m.Delete("y")
	if m.Len() != 0 || len(m.All()) != 0 {
		t.Fatal("Delete")
	}
}

func TestMapConcurrent(t *testing.T) {
	m := New[uint64, *int](HashUint64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				k := uint64(g*1000 + i)
				x := new(int)
				m.Put(k, x)
				if m.Get(k) != x {
					t.Error("lost a value")
					return
				}
			}
		}()
	}
	wg.Wait()
	if m.Len() != 8000 || len(m.All()) != 8000 {
		t.Fatalf("len %d", m.Len())
	}
}
