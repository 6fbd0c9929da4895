package shm

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// waiter is one outstanding call. Whoever moves pending from the call's ID to
// 0 with a compare-and-swap owns the outcome: the reader (an answer came),
// the caller (it gave up) or the teardown (the server died). Only the first
// two may then fill resp/err and signal done, so done carries at most one
// token and the caller always consumes it.
type waiter struct {
	pending atomic.Uint64 // ID of the call waiting here, 0 when none
	seq     uint64        // caller-owned: calls made through this waiter
	idx     uint64
	dst     []byte // caller's buffer; resp = append(dst[:0], answer...)
	resp    []byte
	status  uint16
	err     error
	done    chan struct{}
	ts      unix.Timespec // the futex timeout while this call holds the reader token
}

// Request IDs are seq<<16 | idx: the index finds the waiter without a map
// and the sequence tells a late answer for an earlier call through the same
// waiter from the current one. seq starts at 1, so an ID is never 0.
const idxBits = 16

type waiters struct {
	all  []*waiter
	free chan *waiter
}

func newWaiters(n int) waiters {
	ws := waiters{all: make([]*waiter, n), free: make(chan *waiter, n)}
	for i := range ws.all {
		w := &waiter{idx: uint64(i), done: make(chan struct{}, 1)}
		ws.all[i] = w
		ws.free <- w
	}
	return ws
}

// lookup returns the waiter an ID names, nil if the ID is out of range.
func (ws *waiters) lookup(id uint64) *waiter {
	i := id & (1<<idxBits - 1)
	if i >= uint64(len(ws.all)) {
		return nil
	}
	return ws.all[i]
}

// failAll ends every pending call with err.
func (ws *waiters) failAll(err error) {
	for _, w := range ws.all {
		if id := w.pending.Load(); id != 0 && w.pending.CompareAndSwap(id, 0) {
			w.resp, w.status, w.err = nil, 0, err
			w.done <- struct{}{}
		}
	}
}
