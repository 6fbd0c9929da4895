package store

import (
	"context"
	"testing"
	"time"
)

// TestPostgresGoesAwayAndComesBack: while the server is down, the store's
// calls fail with an error (no hang, no panic) and nothing acknowledged is
// lost; once it is back the same Store works again without reopening.
func TestPostgresGoesAwayAndComesBack(t *testing.T) {
	postgresDSN(t) // skips without a server for the tests
	srv, err := startPostgres()
	if err != nil {
		t.Skipf("no dedicated PostgreSQL server: %v", err)
	}
	t.Cleanup(srv.stop)
	s, err := OpenPostgres(srv.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	subs := DefaultSubscribers(2)
	if err := s.Put(subs[0]); err != nil {
		t.Fatal(err)
	}
	sqn, err := s.IncrementSQN(subs[0].SUPI)
	if err != nil {
		t.Fatal(err)
	}

	srv.halt()
	start := time.Now()
	if _, err := s.Get(subs[0].SUPI); err == nil {
		t.Fatal("read succeeded with the server down")
	}
	if err := s.Put(subs[1]); err == nil {
		t.Fatal("write acknowledged with the server down")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("failing took %v", d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), pgStartTimeout)
	defer cancel()
	if err := srv.run(ctx); err != nil {
		t.Fatal(err)
	}
	var got Subscriber
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = s.Get(subs[0].SUPI)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || got.SQN != sqn {
		t.Fatalf("after the restart: %+v %v (SQN %d acknowledged)", got, err, sqn)
	}
	if next, err := s.IncrementSQN(subs[0].SUPI); err != nil || next <= sqn {
		t.Errorf("SQN after the restart %d (%v), was %d", next, err, sqn)
	}
	if err := s.Put(subs[1]); err != nil {
		t.Errorf("write after the restart: %v", err)
	}
}
