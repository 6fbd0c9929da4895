package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func openT(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := OpenOptions(path, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPersistenceAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "subscribers.db")
	s := openT(t, path, Options{})
	subs := DefaultSubscribers(3)
	if n, err := s.PutAll(subs, false); err != nil || n != 3 {
		t.Fatalf("PutAll = %d, %v", n, err)
	}
	if _, err := s.IncrementSQN(subs[0].SUPI); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IncrementSQN(subs[0].SUPI); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(subs[2].SUPI); err != nil {
		t.Fatal(err)
	}
	changed := subs[1].Clone()
	changed.GPSIs = []string{"msisdn-0900000002"}
	if err := s.Put(changed); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r := openT(t, path, Options{})
	if r.Len() != 2 {
		t.Fatalf("Len after reopen = %d, want 2", r.Len())
	}
	got, err := r.Get(subs[0].SUPI)
	if err != nil || got.SQN != 2 {
		t.Fatalf("Get %s = sqn %d, %v; want sqn 2", subs[0].SUPI, got.SQN, err)
	}
	if string(got.K) != string(subs[0].K) || got.Slices[0].DNNs[0].Name != DemoDNN {
		t.Fatalf("record changed across reopen: %+v", got)
	}
	got, _ = r.Get(subs[1].SUPI)
	if len(got.GPSIs) != 1 || got.GPSIs[0] != "msisdn-0900000002" {
		t.Fatalf("update lost: %+v", got.GPSIs)
	}
	if _, err := r.Get(subs[2].SUPI); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted record: err = %v, want ErrNotFound", err)
	}
}

func TestPutAllKeepsExisting(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	subs := DefaultSubscribers(2)
	if _, err := s.PutAll(subs[:1], false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IncrementSQN(subs[0].SUPI); err != nil {
		t.Fatal(err)
	}
	n, err := s.PutAll(subs, false)
	if err != nil || n != 1 {
		t.Fatalf("PutAll = %d, %v; want 1 new", n, err)
	}
	if got, _ := s.Get(subs[0].SUPI); got.SQN != 1 {
		t.Fatalf("existing subscriber overwritten: sqn %d", got.SQN)
	}
}

func TestGetReturnsCopy(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	sub := DefaultSubscribers(1)[0]
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(sub.SUPI)
	got.K[0] ^= 0xff
	got.Slices[0].DNNs[0].Name = "changed"
	again, _ := s.Get(sub.SUPI)
	if again.K[0] != sub.K[0] || again.Slices[0].DNNs[0].Name != DemoDNN {
		t.Fatal("mutating a Get result changed the store")
	}
}

// A crash during compaction leaves a temporary file and the intact old log.
func TestLeftoverTempFileIgnored(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "subscribers.db")
	s := openT(t, path, Options{})
	subs := DefaultSubscribers(2)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	s.Close()
	tmp := filepath.Join(dir, "subscribers.db.tmp-12345")
	if err := os.WriteFile(tmp, []byte("deadbeef {\"op\":\"put\",\"sub\":{\"supi\":\"imsi-2089"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := openT(t, path, Options{})
	if r.Len() != 2 {
		t.Fatalf("Len = %d, want 2", r.Len())
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("leftover temp file not removed: %v", err)
	}
}

// A crash in the middle of an append leaves a torn last line: the
// acknowledged records survive and the store keeps working.
func TestTornAppendRecovered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{})
	sub := DefaultSubscribers(1)[0]
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IncrementSQN(sub.SUPI); err != nil {
		t.Fatal(err)
	}
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	good := len(data)

	for _, torn := range []string{
		`0badc0de {"op":"sqn","supi":"imsi-208930000000001","sq`,                  // cut mid-line
		"00000000 {\"op\":\"sqn\",\"supi\":\"imsi-208930000000001\",\"sqn\":7}\n", // bad CRC, complete line
	} {
		if err := os.WriteFile(path, append(data[:good:good], torn...), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatalf("open with torn tail %q: %v", torn, err)
		}
		got, err := r.Get(sub.SUPI)
		if err != nil || got.SQN != 1 {
			t.Fatalf("after torn tail: sqn %d, %v; want 1", got.SQN, err)
		}
		if n, err := r.IncrementSQN(sub.SUPI); err != nil || n != 2 {
			t.Fatalf("IncrementSQN after recovery = %d, %v", n, err)
		}
		r.Close()
		r, err = Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := r.Get(sub.SUPI); got.SQN != 2 {
			t.Fatalf("write after recovery lost: sqn %d", got.SQN)
		}
		r.Close()
		data, _ = os.ReadFile(path)
		data = data[:good]
	}
}

// Damage before the end is not a torn append; the store must not guess.
func TestCorruptMiddleRejected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{})
	if _, err := s.PutAll(DefaultSubscribers(2), false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IncrementSQN(DemoSUPI(1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	data, _ := os.ReadFile(path)
	i := strings.Index(string(data), "\"k\":\"") + 6
	data[i] ^= 1
	os.WriteFile(path, data, 0o600)
	if _, err := Open(path); err == nil {
		t.Fatal("Open accepted a log corrupted in the middle")
	}
}

func TestConcurrentIncrementSQN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{NoSync: true, CompactMin: 16})
	subs := DefaultSubscribers(2)
	if _, err := s.PutAll(subs, false); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 50
	var wg sync.WaitGroup
	seen := make([]map[uint64]bool, len(subs))
	var mu sync.Mutex
	for i := range seen {
		seen[i] = map[uint64]bool{}
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k := (w + i) % len(subs)
				n, err := s.IncrementSQN(subs[k].SUPI)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[k][n] {
					t.Errorf("sqn %d issued twice for %s", n, subs[k].SUPI)
				}
				seen[k][n] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := uint64(0)
	for _, sub := range subs {
		got, _ := s.Get(sub.SUPI)
		total += got.SQN
	}
	if total != workers*each {
		t.Fatalf("sum of SQNs = %d, want %d", total, workers*each)
	}
	s.Close()
	// The log was compacted several times (CompactMin 16); the result persists.
	r := openT(t, path, Options{})
	sum := uint64(0)
	for _, sub := range r.List() {
		sum += sub.SQN
	}
	if sum != workers*each {
		t.Fatalf("after reopen sum = %d, want %d", sum, workers*each)
	}
}

func TestCompactionShrinksLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openT(t, path, Options{NoSync: true, CompactMin: 8})
	sub := DefaultSubscribers(1)[0]
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := s.IncrementSQN(sub.SUPI); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(path)
	if lines := strings.Count(string(data), "\n"); lines > 9 {
		t.Fatalf("log has %d lines after compaction, want <= 9", lines)
	}
	s.Close()
	r := openT(t, path, Options{})
	if got, _ := r.Get(sub.SUPI); got.SQN != 100 {
		t.Fatalf("sqn after compaction+reopen = %d, want 100", got.SQN)
	}
}

func TestUpdateSQN(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	sub := DefaultSubscribers(1)[0]
	sub.SQN = MaxSQN
	if err := s.Put(sub); err != nil {
		t.Fatal(err)
	}
	if n, err := s.IncrementSQN(sub.SUPI); err != nil || n != 0 {
		t.Fatalf("IncrementSQN at max = %d, %v; want wrap to 0", n, err)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateSQN(sub.SUPI, 0, func(uint64) (uint64, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("UpdateSQN error = %v", err)
	}
	if _, err := s.UpdateSQN(sub.SUPI, 0, func(uint64) (uint64, error) { return MaxSQN + 1, nil }); err == nil {
		t.Fatal("UpdateSQN accepted a 49-bit SQN")
	}
	if _, err := s.IncrementSQN("imsi-001010000000009"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown SUPI: %v", err)
	}
}

func TestValidateNamesField(t *testing.T) {
	base := DefaultSubscribers(1)[0]
	cases := []struct {
		field  string
		mutate func(*Subscriber)
	}{
		{"supi", func(s *Subscriber) { s.SUPI = "208930000000001" }},
		{"k:", func(s *Subscriber) { s.K = s.K[:15] }},
		{"op:", func(s *Subscriber) { s.OP = nil }},
		{"opType", func(s *Subscriber) { s.OPType = "opc" }},
		{"amf", func(s *Subscriber) { s.AMF = HexBytes{1} }},
		{"sqn", func(s *Subscriber) { s.SQN = MaxSQN + 1 }},
		{"slices[0].snssai", func(s *Subscriber) { s.Slices[0].SNSSAI = "1-0102" }},
		{"slices[0].dnns[0].5qi", func(s *Subscriber) { s.Slices[0].DNNs[0].FiveQI = 0 }},
		{"slices[0].dnns[0].arpPriority", func(s *Subscriber) { s.Slices[0].DNNs[0].ARPPriority = 16 }},
		{"slices[0].dnns[1].default", func(s *Subscriber) { s.Slices[0].DNNs[1].Default = true }},
	}
	for _, c := range cases {
		sub := base.Clone()
		c.mutate(&sub)
		err := sub.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: Validate() = %v, want error naming it", c.field, err)
		}
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("demo subscriber invalid: %v", err)
	}
}

func TestClosedStoreRefusesWrites(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Put(DefaultSubscribers(1)[0]); err == nil {
		t.Fatal("Put after Close succeeded")
	}
}
