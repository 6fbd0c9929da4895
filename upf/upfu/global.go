package upfu

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/upf/rules"
)

// globalTable is the UPF-wide PDR table of Config.GlobalPDRTable: the
// rules of every installed session in one classifier (classify.ForTable
// with Hints.Global), so that a packet is classified in one lookup
// without finding its session first, as in a UPF with one global PDR
// list. Each rule is scoped to its session, uplink rules to the
// session's TEIDs and downlink rules to its UE address, the keys the
// per-session mode finds the session by; rules of different sessions
// therefore never overlap, and a lookup returns the PDR the session's
// own table would (TS 29.244 §5.2.1: the highest-precedence PDR of the
// session the packet belongs to).
//
// The classifier returns a global rule ID (gid), which refs maps to the
// session entry and PDR index. Writers (Install and Remove, under
// Pipeline.mu) insert a session's new rules before deleting its old
// ones, so a packet classified during a modification meets the old or
// the new rules, never neither. A freed gid is reused only after
// reuseAfter, long after any lookup that could have returned it; a
// lookup that meets a gid freed meanwhile looks again.
type globalTable struct {
	cls  classify.Classifier
	refs atomic.Pointer[[]*refChunk] // directory; chunks are never replaced
	log  *slog.Logger

	// writer only
	next uint32    // first gid never used
	free []uint32  // gids free for reuse
	held []heldGID // freed gids waiting out reuseAfter, oldest first
}

const (
	refChunkSize = 1024
	reuseAfter   = time.Second
)

type refChunk [refChunkSize]atomic.Pointer[gref]

// gref is what a gid stands for: a PDR of a session, and the key (TEID,
// or UE IPv4 address) that the rule was scoped to.
type gref struct {
	e   *entry
	idx uint32 // index in e.sess.PDRs
	key uint32
	dir rules.Direction
}

type heldGID struct {
	gid  uint32
	free time.Time
}

func newGlobalTable(log *slog.Logger) (*globalTable, error) {
	cls, err := classify.ForTable(nil, classify.Hints{Global: true})
	if err != nil {
		return nil, fmt.Errorf("upfu: global PDR table: %w", err)
	}
	g := &globalTable{cls: cls, log: log}
	g.refs.Store(&[]*refChunk{})
	return g, nil
}

// lookup classifies h, whose session key for direction dir is key (its
// TEID, or its UE IPv4 address), and returns the session and PDR index.
func (g *globalTable) lookup(h *classify.Header, key uint32, dir rules.Direction) (*entry, uint32, bool) {
	for range 3 {
		id, ok := g.cls.Lookup(h)
		if !ok {
			return nil, 0, false
		}
		r := g.ref(id)
		if r == nil {
			continue // deleted since the lookup: look again
		}
		if r.key != key || r.dir != dir {
			// Scoping makes this impossible while gids are not reused
			// early; drop rather than apply another session's rules.
			return nil, 0, false
		}
		return r.e, r.idx, true
	}
	return nil, 0, false
}

func (g *globalTable) ref(gid uint32) *gref {
	dir := *g.refs.Load()
	if c := gid / refChunkSize; int(c) < len(dir) {
		return dir[c][gid%refChunkSize].Load()
	}
	return nil
}

// scopedRule is a session rule with the session key it was scoped to.
type scopedRule struct {
	r   classify.Rule
	key uint32
	dir rules.Direction
}

// scope restricts s's rules to the packets the per-session mode would
// classify on them: uplink rules to the session's TEIDs (a rule naming
// another TEID, or another source interface, could never match there and
// is left out), downlink rules to its UE address. Order within the
// session (by rule ID, the PDR index) is kept for equal precedences.
func scope(s *rules.Session) []scopedRule {
	var out []scopedRule
	access, core := uint8(rules.InterfaceAccess), uint8(rules.InterfaceCore)
	for _, r := range s.UplinkRules {
		if r.Has&classify.FieldSourceInterface != 0 && r.SourceInterface != access {
			continue
		}
		r.Has |= classify.FieldSourceInterface
		r.SourceInterface = access
		if r.Has&classify.FieldTEID != 0 {
			if slices.Contains(s.TEIDs, r.TEID) {
				out = append(out, scopedRule{r, r.TEID, rules.Uplink})
			}
			continue
		}
		r.Has |= classify.FieldTEID
		for _, t := range s.TEIDs {
			r.TEID = t
			out = append(out, scopedRule{r, t, rules.Uplink})
		}
	}
	if s.UEIPv4.Is4() {
		ue := classify.PrefixFromNetip(netip.PrefixFrom(s.UEIPv4, 32))
		for _, r := range s.DownlinkRules {
			if r.Has&classify.FieldSourceInterface != 0 && r.SourceInterface != core ||
				r.UEIP.Len > 0 && !r.UEIP.Contains(ue.Addr) {
				continue
			}
			r.Has |= classify.FieldSourceInterface
			r.SourceInterface = core
			r.UEIP = ue
			out = append(out, scopedRule{r, v4(s.UEIPv4), rules.Downlink})
		}
	}
	slices.SortStableFunc(out, func(a, b scopedRule) int { return cmp.Compare(a.r.ID, b.r.ID) })
	return out
}

// add inserts e's scoped rules and returns their gids (writer).
func (g *globalTable) add(e *entry) []uint32 {
	rs := scope(e.sess)
	gids := g.alloc(len(rs))
	// Ascending gids in session order keep the session's tie-break
	// between equal precedences (classify orders ties by ID).
	slices.Sort(gids)
	kept := gids[:0]
	for i := range rs {
		r, gid := rs[i].r, gids[i]
		idx := r.ID
		r.ID = gid
		if int(idx) >= len(e.sess.PDRs) {
			g.log.Error("upfu: rule names no PDR: left out", "seid", e.sess.SEID, "index", idx)
			g.release(gid, time.Time{})
			continue
		}
		// The reference is published before the rule, so a lookup never
		// finds a rule it cannot resolve.
		g.set(gid, &gref{e: e, idx: idx, key: rs[i].key, dir: rs[i].dir})
		if err := g.cls.Insert(r); err != nil {
			g.log.Error("upfu: rule refused by the global PDR table: left out", "seid", e.sess.SEID, "index", idx, "err", err)
			g.set(gid, nil)
			g.release(gid, time.Time{})
			continue
		}
		kept = append(kept, gid)
	}
	return kept
}

// remove deletes the rules with these gids (writer).
func (g *globalTable) remove(gids []uint32) {
	now := time.Now()
	for _, gid := range gids {
		if err := g.cls.Delete(gid); err != nil {
			g.log.Error("upfu: global PDR table lost a rule", "gid", gid, "err", err)
		}
		g.set(gid, nil)
		g.release(gid, now)
	}
}

// dropKey deletes e's rules of direction dir scoped to key, when another
// session takes the key over (the per-session mode then stops finding
// e by it) (writer).
func (g *globalTable) dropKey(e *entry, dir rules.Direction, key uint32) {
	keep := e.gids[:0]
	var drop []uint32
	for _, gid := range e.gids {
		if r := g.ref(gid); r != nil && r.dir == dir && r.key == key {
			drop = append(drop, gid)
		} else {
			keep = append(keep, gid)
		}
	}
	e.gids = keep
	g.remove(drop)
}

func (g *globalTable) set(gid uint32, r *gref) {
	dir := *g.refs.Load()
	for int(gid/refChunkSize) >= len(dir) {
		dir = append(slices.Clip(dir), new(refChunk))
		g.refs.Store(&dir)
	}
	dir[gid/refChunkSize][gid%refChunkSize].Store(r)
}

// alloc returns n gids: reusable ones first, then new ones.
func (g *globalTable) alloc(n int) []uint32 {
	now := time.Now()
	for len(g.held) > 0 && now.Sub(g.held[0].free) >= reuseAfter {
		g.free = append(g.free, g.held[0].gid)
		g.held = g.held[1:]
	}
	out := make([]uint32, 0, n)
	for len(out) < n && len(g.free) > 0 {
		out = append(out, g.free[len(g.free)-1])
		g.free = g.free[:len(g.free)-1]
	}
	for len(out) < n {
		out = append(out, g.next)
		g.next++
	}
	return out
}

// release makes gid reusable after reuseAfter from freed; a zero freed
// (a gid never published to lookups) makes it reusable at once.
func (g *globalTable) release(gid uint32, freed time.Time) {
	if freed.IsZero() {
		g.free = append(g.free, gid)
		return
	}
	g.held = append(g.held, heldGID{gid, freed})
}
