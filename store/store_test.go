package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	if pgTest.srv != nil {
		pgTest.srv.stop()
	}
	os.Exit(code)
}

// engine opens stores of one engine for the shared suite.
type engine struct {
	name string
	// open returns an empty store, and an opener of other Stores on the
	// same data, as another process (or the same one after a crash, when
	// the first is never closed) would open it.
	open func(t testing.TB) (*Store, opener)
}

// opener opens another Store on the same data.
type opener func() (*Store, error)

// must opens the store or fails t, and closes it when t ends.
func (o opener) must(t testing.TB) *Store {
	t.Helper()
	s, err := o()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sqliteEngine() engine {
	return engine{name: DriverSQLite, open: func(t testing.TB) (*Store, opener) {
		path := filepath.Join(t.TempDir(), "subscribers.db")
		again := opener(func() (*Store, error) { return Open(path) })
		return again.must(t), again
	}}
}

func postgresEngine() engine {
	return engine{name: DriverPostgres, open: func(t testing.TB) (*Store, opener) {
		dsn := postgresDSN(t)
		again := opener(func() (*Store, error) { return OpenPostgres(dsn) })
		return again.must(t), again
	}}
}

// forEngines runs fn once per engine, each as a subtest; PostgreSQL's
// skip when no server can be started.
func forEngines(t *testing.T, fn func(t *testing.T, e engine)) {
	for _, e := range []engine{sqliteEngine(), postgresEngine()} {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}

func openT(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := OpenOptions(path, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func lenT(t *testing.T, s *Store) int {
	t.Helper()
	n, err := s.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPersistenceAcrossReopen(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, again := e.open(t)
		subs := DefaultSubscribers(3)
		if n, err := s.PutAll(subs, false); err != nil || n != 3 {
			t.Fatalf("PutAll = %d, %v", n, err)
		}
		for range 2 {
			if _, err := s.IncrementSQN(subs[0].SUPI); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete(subs[2].SUPI); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(subs[2].SUPI); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleting twice: %v, want ErrNotFound", err)
		}
		changed := subs[1].Clone()
		changed.GPSIs = []string{"msisdn-0900000002"}
		if err := s.Put(changed); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		r := again.must(t)
		if n := lenT(t, r); n != 2 {
			t.Fatalf("Len after reopen = %d, want 2", n)
		}
		got, err := r.Get(subs[0].SUPI)
		if err != nil || got.SQN != 2 {
			t.Fatalf("Get %s = sqn %d, %v; want sqn 2", subs[0].SUPI, got.SQN, err)
		}
		if string(got.K) != string(subs[0].K) || got.Slices[0].DNNs[0].Name != DemoDNN || got.OPType != OPTypeOPc {
			t.Fatalf("record changed across reopen: %+v", got)
		}
		got, _ = r.Get(subs[1].SUPI)
		if len(got.GPSIs) != 1 || got.GPSIs[0] != "msisdn-0900000002" {
			t.Fatalf("update lost: %+v", got.GPSIs)
		}
		if _, err := r.Get(subs[2].SUPI); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted record: err = %v, want ErrNotFound", err)
		}
		list, err := r.List()
		if err != nil || len(list) != 2 || list[0].SUPI != subs[0].SUPI || list[0].SQN != 2 || list[1].SUPI != subs[1].SUPI {
			t.Fatalf("List = %+v, %v", list, err)
		}
	})
}

func TestPutAllKeepsExisting(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, _ := e.open(t)
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
		if _, err := s.PutAll([]Subscriber{subs[0], subs[0]}, true); err == nil {
			t.Fatal("PutAll accepted a SUPI twice")
		}
		bad := subs[1].Clone()
		bad.K = bad.K[:3]
		if _, err := s.PutAll([]Subscriber{bad}, true); err == nil || !strings.Contains(err.Error(), "k:") {
			t.Fatalf("invalid subscriber: %v", err)
		}
	})
}

func TestGetReturnsCopy(t *testing.T) {
	s, _ := sqliteEngine().open(t)
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

func TestConcurrentIncrementSQN(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, again := e.open(t)
		subs := DefaultSubscribers(2)
		if _, err := s.PutAll(subs, false); err != nil {
			t.Fatal(err)
		}
		const workers, each = 8, 25
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := []map[uint64]bool{{}, {}}
		for w := range workers {
			wg.Go(func() {
				for i := range each {
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
			})
		}
		wg.Wait()
		s.Close()
		list, err := again.must(t).List()
		if err != nil {
			t.Fatal(err)
		}
		sum := uint64(0)
		for _, sub := range list {
			sum += sub.SQN
		}
		if sum != workers*each {
			t.Fatalf("after reopen sum of SQNs = %d, want %d", sum, workers*each)
		}
	})
}

func TestUpdateSQN(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, _ := e.open(t)
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
		if got, _ := s.Get(sub.SUPI); got.SQN != 0 {
			t.Fatalf("failed updates changed SQN_HE to %d", got.SQN)
		}
		if _, err := s.IncrementSQN("imsi-001010000000009"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown SUPI: %v", err)
		}
	})
}

// A store whose schema a newer tern wrote is refused with an error that
// says so, on both engines.
func TestNewerSchemaRefused(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		s, again := e.open(t)
		if _, err := s.durable.Exec(`UPDATE schema_version SET version = 99`); err != nil {
			t.Fatal(err)
		}
		s.Close()
		_, err := again()
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "99") {
			t.Fatalf("opening a version 99 store: %v, want ErrNewerSchema naming 99", err)
		}
	})
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
	forEngines(t, func(t *testing.T, e engine) {
		s, _ := e.open(t)
		s.Close()
		if err := s.Put(DefaultSubscribers(1)[0]); err == nil {
			t.Fatal("Put after Close succeeded")
		}
	})
}

// A file that is neither SQLite nor a legacy log is refused, not
// overwritten.
func TestForeignFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscribers.db")
	if err := os.WriteFile(path, []byte("hello, world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Fatalf("Open of a foreign file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "hello, world\n" {
		t.Fatal("foreign file changed")
	}
}

// The store file is private: it holds subscriber keys.
func TestStoreFilePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscribers.db")
	s := openT(t, path, Options{})
	if err := s.Put(DefaultSubscribers(1)[0]); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", p, fi.Mode().Perm())
		}
	}
}

func TestOpenDriver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscribers.db")
	s, err := OpenDriver(DriverSQLite, path)
	if err != nil || s.Driver() != DriverSQLite {
		t.Fatalf("sqlite: %v", err)
	}
	s.Close()
	if _, err := OpenDriver("mysql", path); err == nil || !strings.Contains(err.Error(), `"mysql" is not sqlite or postgres`) {
		t.Fatalf("unknown driver: %v", err)
	}
	if _, err := OpenDriver(DriverPostgres, "postgres://tern@127.0.0.1:1/tern?connect_timeout=1"); err == nil {
		t.Fatal("postgres with no server opened")
	}
}
