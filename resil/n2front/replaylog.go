package n2front

import "sort"

// entry is one logged uplink message.
type entry struct {
	stamp  uint64
	assoc  uint32
	stream uint16
	ppid   uint32
	data   []byte // nil once acknowledged
	// sent is set once the message was queued to a unit: queued again to
	// a later unit, it counts as replayed.
	sent bool
}

// replayLog holds the uplink messages no unit has acknowledged yet, in
// stamp order. Acknowledgements may come in any order (each UE's step
// commits on its own), so an acknowledged entry in the middle stays as a
// hole (data nil) until the entries before it are acknowledged too, or
// until holes outnumber live entries and the log is compacted. The caller
// locks.
type replayLog struct {
	entries []entry // entries[head:] are the log; stamps increase
	head    int
	live    int // entries not acknowledged
	bytes   int // their data
}

func (l *replayLog) push(e entry) {
	l.entries = append(l.entries, e)
	l.live++
	l.bytes += len(e.data)
}

// find returns the index of stamp's entry, or -1.
func (l *replayLog) find(stamp uint64) int {
	es := l.entries[l.head:]
	i := sort.Search(len(es), func(i int) bool { return es[i].stamp >= stamp })
	if i == len(es) || es[i].stamp != stamp || es[i].data == nil {
		return -1
	}
	return l.head + i
}

// ack removes stamp's entry and reports whether it was there: a stamp
// acknowledged twice, never given or dropped with its association is not.
func (l *replayLog) ack(stamp uint64) bool {
	i := l.find(stamp)
	if i < 0 {
		return false
	}
	l.remove(i)
	return true
}

func (l *replayLog) remove(i int) {
	l.bytes -= len(l.entries[i].data)
	l.live--
	l.entries[i].data = nil
	l.trim()
}

// trim drops the acknowledged entries at the head and compacts the log
// when holes make up most of it, so that its memory follows what is
// live, not what passed.
func (l *replayLog) trim() {
	for l.head < len(l.entries) && l.entries[l.head].data == nil {
		l.entries[l.head] = entry{}
		l.head++
	}
	n := len(l.entries) - l.head
	switch {
	case n == 0:
		l.entries, l.head = l.entries[:0], 0
	case n > 64 && n > 2*l.live, l.head > 1024 && l.head > n:
		live := make([]entry, 0, 2*l.live)
		for _, e := range l.entries[l.head:] {
			if e.data != nil {
				live = append(live, e)
			}
		}
		l.entries, l.head = live, 0
	}
}

// dropAssoc removes the entries of an association that ended and returns
// how many there were.
func (l *replayLog) dropAssoc(id uint32) int {
	n := 0
	for i := l.head; i < len(l.entries); i++ {
		if e := &l.entries[i]; e.data != nil && e.assoc == id {
			l.bytes -= len(e.data)
			l.live--
			e.data = nil
			n++
		}
	}
	if n > 0 {
		l.trim()
	}
	return n
}

// each calls f with every live entry in stamp order; f may modify the
// entry but not the log.
func (l *replayLog) each(f func(*entry)) {
	for i := l.head; i < len(l.entries); i++ {
		if l.entries[i].data != nil {
			f(&l.entries[i])
		}
	}
}
