package udr

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/store"
)

// TestFollowKeepsTheCacheCoherent: while Follow runs, data sets come from
// the cache, and a change another process makes drops the subscriber's
// entry before the change is handed on, so whoever is notified reads the
// new data (or USER_NOT_FOUND); authentication always reads the store.
func TestFollowKeepsTheCacheCoherent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	u, st := newUDRAt(t, Config{}, path)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	type seen struct {
		ambr    string
		missing bool
	}
	notes := make(chan seen, 10)
	wg.Add(1)
	go func() {
		defer wg.Done()
		u.Follow(ctx, st, time.Millisecond, func(supi string, deleted bool) {
			am, err := u.QueryAmData(ctx, supi, identity.PLMN{})
			if err != nil {
				notes <- seen{missing: sbi.CauseOf(err) == sbi.CauseUserNotFound}
				return
			}
			notes <- seen{ambr: am.SubscribedUeAmbr.Uplink}
		})
	}()
	defer func() { cancel(); wg.Wait() }()
	for !u.following.Load() {
		time.Sleep(time.Millisecond)
	}
	sub := store.DefaultSubscribers(1)[0]
	if _, err := u.QueryAmData(ctx, sub.SUPI, identity.PLMN{}); err != nil { // fills the cache
		t.Fatal(err)
	}
	if u.cache.Get(sub.SUPI) == nil {
		t.Fatal("nothing cached while following")
	}

	// Another process (a second handle on the same file) changes it.
	other, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	changed := sub.Clone()
	changed.UEAMBR = store.AMBR{Uplink: "10 Mbps", Downlink: "20 Mbps"}
	if err := other.Put(changed); err != nil {
		t.Fatal(err)
	}
	if n := <-notes; n.ambr != "10 Mbps" {
		t.Errorf("notified of the change, read %+v: the stale entry was served", n)
	}
	if err := other.Delete(sub.SUPI); err != nil {
		t.Fatal(err)
	}
	if n := <-notes; !n.missing {
		t.Errorf("notified of the deletion, read %+v", n)
	}
	if _, err := u.QueryAuthenticationSubscription(ctx, sub.SUPI); sbi.CauseOf(err) != sbi.CauseUserNotFound {
		t.Errorf("authentication of a deleted subscriber: %v", err)
	}
}

// Without Follow nothing is cached: a change is read at once.
func TestNoCacheWithoutFollow(t *testing.T) {
	u, st := newUDR(t, Config{})
	ctx := context.Background()
	sub := store.DefaultSubscribers(1)[0]
	if _, err := u.QueryAmData(ctx, sub.SUPI, identity.PLMN{}); err != nil {
		t.Fatal(err)
	}
	changed := sub.Clone()
	changed.UEAMBR = store.AMBR{Uplink: "3 Mbps", Downlink: "4 Mbps"}
	if err := st.Put(changed); err != nil {
		t.Fatal(err)
	}
	am, err := u.QueryAmData(ctx, sub.SUPI, identity.PLMN{})
	if err != nil || am.SubscribedUeAmbr.Uplink != "3 Mbps" || u.cache.Len() != 0 {
		t.Errorf("am-data %+v, %v; %d cached", am, err, u.cache.Len())
	}
}

// A change feed that cannot be read stops the cache until it can.
func TestUnreadableFeedStopsTheCache(t *testing.T) {
	u, st := newUDR(t, Config{})
	feed := &failingFeed{ChangeFeed: st}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); u.Follow(ctx, feed, time.Millisecond, func(string, bool) {}) }()
	defer func() { cancel(); <-done }()
	for !u.following.Load() {
		time.Sleep(time.Millisecond)
	}
	sub := store.DefaultSubscribers(1)[0]
	u.QueryAmData(ctx, sub.SUPI, identity.PLMN{})
	feed.setFailing(true)
	deadline := time.Now().Add(5 * time.Second)
	for u.following.Load() || u.cache.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still caching (%d entries) with the feed unreadable", u.cache.Len())
		}
		time.Sleep(time.Millisecond)
	}
	feed.setFailing(false)
	for !u.following.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the cache did not come back with the feed")
		}
		time.Sleep(time.Millisecond)
	}
}

type failingFeed struct {
	ChangeFeed
	mu   sync.Mutex
	fail bool
}

func (f *failingFeed) setFailing(v bool) { f.mu.Lock(); f.fail = v; f.mu.Unlock() }

func (f *failingFeed) Changes(after uint64, limit int) ([]store.Change, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return nil, errors.New("feed unreachable")
	}
	return f.ChangeFeed.Changes(after, limit)
}
