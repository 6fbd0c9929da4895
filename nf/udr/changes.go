package udr

import (
	"context"
	"time"

	"github.com/tern5g/tern/store"
)

// ChangeFeed is what Follow needs from the store: its numbered changes;
// *store.Store implements it.
type ChangeFeed interface {
	LastChange() (uint64, error)
	Changes(after uint64, limit int) ([]store.Change, error)
}

// clearCache drops every cached subscriber.
func (u *UDR) clearCache() {
	for _, c := range u.cache.All() {
		u.cache.CompareAndDelete(c.sub.SUPI, c)
	}
}

// changeBatch bounds the changes read at once.
const changeBatch = 1000

// Follow reads feed every interval until ctx ends and calls notify for each
// subscriber written or deleted from now on, by any process sharing the
// store (the CLI, another core): the UDR's data change notification to the
// UDM (TS 29.504 §5.2.2.3, Nudr_DR subscriptions to subscription data).
// The UDR itself needs no notice: it reads subscribers afresh on every
// request, so a new or changed subscriber is served at once. A read that
// fails is retried at the next interval; changes are never skipped.
func (u *UDR) Follow(ctx context.Context, feed ChangeFeed, interval time.Duration, notify func(supi string, deleted bool)) error {
	last, err := feed.LastChange()
	if err != nil {
		return err
	}
	// The cache starts empty and is coherent from here on: every change
	// after last drops its entry.
	u.clearCache()
	u.following.Store(true)
	defer func() {
		u.following.Store(false)
		u.clearCache()
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for {
			cs, err := feed.Changes(last, changeBatch)
			if err != nil {
				// The next interval tries again from the same place;
				// meanwhile nothing is served from the cache.
				u.log.Warn("reading the subscriber change feed failed", "err", err)
				u.following.Store(false)
				u.clearCache()
				break
			}
			u.following.Store(true)
			for _, c := range cs {
				u.cache.Delete(c.SUPI) // before the notification: see UDR
				if c.Deleted {
					u.ueData.forget(c.SUPI)
				}
				notify(c.SUPI, c.Deleted)
				last = c.Seq
			}
			if len(cs) < changeBatch {
				break
			}
		}
	}
}
