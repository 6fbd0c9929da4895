package shm

import "sync/atomic"

// Stats counts what one end saw. Counters only grow, except Clients.
type Stats struct {
	// Calls: client: calls answered; server: requests answered.
	Calls uint64
	// Timeouts: client: calls whose context ended before the answer.
	Timeouts uint64
	// Late: client: answers that came after their caller gave up (dropped);
	// server: answers dropped because their client had gone.
	Late uint64
	// Corrupt: records rejected (bad length, header check or generation)
	// plus ring resynchronisations after impossible indices.
	Corrupt uint64
	// PeerDown: client: calls failed with ErrPeerDown.
	PeerDown uint64
	// PeerRestarts: client: reconnections to a server that was restarted;
	// server: clients that went away (closed or died) and whose rings were
	// freed.
	PeerRestarts uint64
	// Clients: server: clients connected now; client: 1 while connected.
	Clients uint64
}

type counters struct {
	calls, timeouts, late, corrupt, peerDown, peerRestarts, clients atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Calls:        c.calls.Load(),
		Timeouts:     c.timeouts.Load(),
		Late:         c.late.Load(),
		Corrupt:      c.corrupt.Load(),
		PeerDown:     c.peerDown.Load(),
		PeerRestarts: c.peerRestarts.Load(),
		Clients:      c.clients.Load(),
	}
}
