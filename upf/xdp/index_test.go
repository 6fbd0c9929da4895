package xdp

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/upf/rules"
)

func TestIndexPlaces(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 64}, {1, 64}, {64, 64}, {65, 128}, {100000, 131072}, {131072, 131072}, {131073, 262144}} {
		if got := IndexPlaces(c.n); got != uint32(c.want) {
			t.Errorf("IndexPlaces(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// settle waits until the retiring goroutine has freed every retired
// place of the indexes.
func settle(t *testing.T, f *FastPath) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		done := true
		for _, x := range []*sessionIndex{f.teidIndex, f.ueIndex} {
			done = done && len(x.retired) == 0 && !slices.Contains(x.isRetired, true)
		}
		f.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("retired index places not freed in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *env) indexed(want int) {
	e.t.Helper()
	if st := e.f.Stats(); st.Indexed != want {
		e.t.Fatalf("%d keys indexed, want %d (stats %+v)", st.Indexed, want, st)
	}
}

// TestIndexChange: a change of an indexed session takes effect at once
// (through the hash map) and the session is back in the index a grace
// period later, with the new rules.
func TestIndexChange(t *testing.T) {
	e := setup(t, nil)
	e.install(session(sessOpts{}))
	e.indexed(2) // its TEID and its UE address
	frame := ulFrame(ulTEID, qfi, udp4(ueIP, dnIP, 1, 2, 100))
	act, _ := e.ul(frame)
	e.want(act, xdpRedirect)

	e.install(session(sessOpts{ulFAR: rules.ActionDrop}))
	act, _ = e.ul(frame)
	e.want(act, xdpDrop)
	settle(t, e.f)
	e.indexed(2)
	act, _ = e.ul(frame)
	e.want(act, xdpDrop)
	if n := e.stat("far-drop"); n != 2 {
		t.Fatalf("%d FAR drops, want 2 (stats %+v)", n, e.f.Stats())
	}

	// Rules the index cannot hold move the keys to the hash maps.
	web := classify.PrefixFromNetip(netip.MustParsePrefix("8.8.8.0/24"))
	e.install(session(sessOpts{ulRules: []classify.Rule{
		{ID: 0, Precedence: 10, Has: classify.FieldTEID | classify.FieldProto, TEID: ulTEID, Proto: 17, DstIP: web},
		{ID: 0, Precedence: 20, Has: classify.FieldTEID, TEID: ulTEID},
	}}))
	settle(t, e.f)
	e.indexed(1) // the UE address only
	act, _ = e.ul(frame)
	e.want(act, xdpRedirect)
}

// TestIndexCollision: keys that share a place are all offloaded; when the
// one in the index goes, the next takes its place.
func TestIndexCollision(t *testing.T) {
	e := setup(t, func(c *Config) { c.MaxSessions = 8 })
	size := IndexPlaces(8)
	teid := func(k int) uint32 { return 1 + uint32(k)*size }
	ue := func(k int) netip.Addr { return netip.AddrFrom4([4]byte{10, 60, 0, byte(teid(k))}) }
	for k := range 3 {
		e.install(session(sessOpts{seid: uint64(k + 1), ulTEID: teid(k), ue: ue(k)}))
	}
	e.indexed(2)
	fwd := func(k int) {
		t.Helper()
		act, _ := e.ul(ulFrame(teid(k), qfi, udp4(ue(k), dnIP, 1, 2, 100)))
		e.want(act, xdpRedirect)
		act, _ = e.dl(dlFrame(udp4(dnIP, ue(k), 2, 1, 100)))
		e.want(act, xdpRedirect)
	}
	for k := range 3 {
		fwd(k)
	}
	e.f.Remove(1)
	settle(t, e.f)
	e.indexed(2) // session 2, the first waiting
	act, _ := e.ul(ulFrame(teid(0), qfi, udp4(ue(0), dnIP, 1, 2, 100)))
	e.want(act, xdpPass)
	fwd(1)
	fwd(2)
	e.f.mu.Lock()
	x := e.f.teidIndex
	if got := x.entries[1].Key; got != teid(1) {
		t.Errorf("place 1 holds TEID %#x, want %#x", got, teid(1))
	}
	if _, ok := x.hashed[teid(1)]; ok {
		t.Errorf("TEID %#x still in the hash map", teid(1))
	}
	e.f.mu.Unlock()
}

// TestIndexCycles: thousands of sessions installed, changed and removed,
// in and out of the index, leave every place, hash map entry and waiter
// free.
func TestIndexCycles(t *testing.T) {
	e := setup(t, func(c *Config) { c.MaxSessions = 64 })
	const n, keys = 2000, 48 // all of them fit the hash maps
	waited := 0
	for i := range n {
		k := i % keys
		// The TEIDs share 8 of the 64 places, the UE addresses one.
		s := sessOpts{seid: uint64(k + 1), ulTEID: uint32(k*40 + 1), ue: netip.AddrFrom4([4]byte{10, 60, byte(k), 1})}
		if i%3 == 1 {
			s.ulFAR = rules.ActionDrop
		}
		if !e.f.Install(session(s)) {
			t.Fatalf("cycle %d: Install failed (stats %+v)", i, e.f.Stats())
		}
		if i%5 == 4 {
			e.f.Remove(uint64(k + 1))
		}
		e.f.mu.Lock()
		waited = max(waited, len(e.f.teidIndex.waiting)+len(e.f.ueIndex.waiting))
		e.f.mu.Unlock()
	}
	if waited == 0 {
		t.Fatal("no key ever waited for a place")
	}
	for k := range keys {
		e.f.Remove(uint64(k + 1))
	}
	settle(t, e.f)
	e.indexed(0)
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	for _, x := range []*sessionIndex{e.f.teidIndex, e.f.ueIndex} {
		if len(x.hashed)+len(x.waiting) != 0 || x.live != 0 {
			t.Errorf("%s: %d hashed, %d waiting, %d live", x.name, len(x.hashed), len(x.waiting), x.live)
		}
		for i := range x.entries {
			if x.entries[i].Key != 0 {
				t.Errorf("%s: place %d holds %#x", x.name, i, x.entries[i].Key)
			}
		}
		var k uint32
		var v upfSess
		it := x.hash.Iterate()
		if it.Next(&k, &v) {
			t.Errorf("%s: hash map holds %#x", x.name, k)
		}
		if err := it.Err(); err != nil {
			t.Errorf("%s: %v", x.name, err)
		}
	}
}
