// Package shm moves requests and responses between the processes of one node
// through shared memory: the transport of a shared-memory SBI binding, with
// no socket on the data path. It is the L25GC paper's shared-memory SBI
// (§3.1) without HTTP or JSON inside: records carry opaque bytes that the
// binding above encodes and decodes; this package only copies them.
//
// A server Listens on a service name ("smf") with a Handler; clients Dial the
// name and Call it. Each client gets a channel of its own, a pair of
// lock-free single-producer single-consumer rings: requests client -> server,
// responses server -> client.
//
// # Files and security domain
//
// Everything lives in the deployment directory Config.Dir, created 0700
// (one that exists with looser permissions or another owner is refused);
// every file in it is created 0600. Only the user the NFs run as can attach,
// which is the paper's security domain with the file mode doing the work of
// DPDK's private file prefix. Put the directory on tmpfs (the default is
// /dev/shm/tern-<euid>) so that the pool is plain memory. For service "smf":
//
//	smf.pool             the shared mapping (MAP_SHARED), built by Listen in
//	                     smf.pool.new and renamed into place; removed by Close
//	smf.server.lock      flock LOCK_EX held by the server for its lifetime;
//	                     holds "gen N pid P" for the next server (and for people)
//	smf.client.<i>.lock  flock LOCK_EX held by the client using channel i
//
// Lock files are never deleted (deleting a file someone may be about to
// lock would let two processes lock two different inodes of one name).
//
// # Memory layout
//
// Integers are little-endian; words shared between processes are accessed
// with sync/atomic; words one side writes often sit on their own cache line.
//
//	page 0, header:        0 magic "TERNSHM1"   8 version   12 ready (set last)
//	                      16 pool generation (the server's "gen", +1 per Listen)
//	                      24 channels  28 ring slots  32 slot bytes
//	                      36 server pid  40 file size (checked on attach)
//	                     128 doorbell: futex, clients bump it to call the server
//	page 1.., channel table, 64 bytes per channel:
//	                       0 state: futex; free, connect, active, closing
//	                       4 channel generation (nonzero while active)
//	                       8 client pid
//	then for channel i, page-aligned: request ring, response ring:
//	  ring header (512 B): 0 tail (u64): next slot the producer fills
//	                     128 head (u64): next slot the consumer reads
//	                     256 wake (u32 futex): whom a producer must wake:
//	                         none (a consumer is awake), the leader, a standby
//	                     384 standby (u32 futex): event count standbys sleep on
//	  then RingSlots slots of SlotBytes; index n lives in slot n mod RingSlots
//	record, one per slot:  0 length u32   4 channel generation u32
//	                       8 request ID u64   16 op u16   18 status u16
//	                      20 flags u32   24 header check u32   28 reserved
//	                      32 payload (at most SlotBytes-32 bytes)
//
// Slots have a fixed size rather than holding variable-length records: a
// message larger than a slot is refused with ErrTooLarge (the limit is
// Config.SlotBytes, 16 KiB by default), and in exchange a bad length can
// never derail the ring: the worst a corrupt record does is spoil its own
// slot.
//
// # Protocol
//
// Connecting: the client takes the lock of a channel whose state is free
// (the kernel arbitrates between clients), sets the state to connect and
// rings the doorbell. The server's acceptor, asleep on the doorbell, resets
// the channel's rings, gives it a new channel generation (derived from the
// pool generation, so unique across server restarts), starts serving it and
// sets it active; the client waits for that on the state word.
//
// Calling: the producer of a ring fills slot tail, then stores tail+1 (the
// atomic store orders the record before the index); the consumer reads slot
// head and stores head+1 when it has copied the record out. The request ring
// has one producer per Client: its callers take turns under a mutex.
// Request IDs are seq<<16 | waiter index, so an answer finds its caller
// without a map, and an answer for an earlier call through the same waiter
// (a caller that gave up) is told apart and dropped (Stats.Late).
//
// Waking: a consumer about to sleep sets the wake word, re-checks the ring,
// then FUTEX_WAITs on the word (shared futexes, not FUTEX_PRIVATE_FLAG,
// because the word is in a file mapping that another process maps). A
// producer, after publishing, looks at the word and makes the FUTEX_WAKE
// syscall only if someone said it would sleep; under load nobody does, and
// no syscall is made. sync/atomic's sequential consistency rules out the
// lost wake-up (see ring.nudge). With Config.BusyPoll a consumer first polls
// its ring that long: the exchange then costs no syscall at all (about 0.6
// µs a round trip here) but burns a core per waiting consumer, so it pays
// only where cores are to spare.
//
// Serving: each channel has a leader goroutine asleep on the request ring,
// which runs the handler itself, and a standby that producers wake instead
// while the leader is busy; the standby recruits another from a shared
// worker pool before it serves. A slow handler thus blocks neither other
// clients nor the same client's next request, and sequential traffic makes
// no goroutine hand-off (serve.go). On the client, the waiting callers take
// turns reading the response ring themselves: a lone caller is woken by the
// futex directly, with its answer (wait.go).
//
// # Crash and recovery
//
// Each end holds its flock for its lifetime, and the kernel drops it when
// the process dies, however it dies. Each end checks the other's lock every
// Config.CheckInterval (50 ms by default), taking it for a moment with
// LOCK_NB:
//
//   - A client finding the server's lock free (or the pool file replaced, or
//     its channel reset) tears its connection down: every call in flight
//     fails at once with ErrPeerDown, as does every new call, instead of at
//     its deadline. Meanwhile it tries to connect every CheckInterval; when a
//     server Listens on the name again, it attaches to the new pool and
//     calls succeed again with the same Client (Stats.PeerRestarts).
//   - A restarted server never reuses the old mapping: it builds a new pool
//     with the next generation and renames it over the old one, so clients
//     of the dead server keep their (orphaned) mapping until they notice, and
//     a record from an earlier connection can never be taken for a current
//     one (the channel generation in every record must match).
//   - A server finding a client's lock free (the client died, or closed and
//     rang the doorbell) stops that channel's goroutines, waits for its
//     handlers to return, gives the ring pages back to tmpfs
//     (MADV_REMOVE, which also zeroes them) and marks the channel free.
//     It holds the client's lock throughout, so no new client claims the
//     channel half-way.
//   - A record that fails its checks (header check, length, generation) is
//     skipped and counted (Stats.Corrupt); indices that cannot be (the
//     producer more than a ring ahead) make the consumer jump to the
//     producer's published tail. Both ends read the shared indices, so the
//     ring is consistent again for both, and traffic goes on.
//
// Nothing here defends against a malicious process inside the security
// domain; the checks are against bugs and torn state, like the paper's trust
// model (all NFs of a deployment are trusted).
//
// # Measuring
//
// PingPong measures calls to a server in a child process and
// EventfdPingPong the floor for any transport that sleeps while idle: two
// processes waking each other through eventfds. Both re-execute the current
// binary, so a program (or test binary) using them must call MaybeRunChild
// first. On the development machine (2 shared cores, 64-byte messages):
// shm 5.0-5.8 µs median per call against 4.7-5.3 µs for the eventfd round
// trip (1.1-1.2x); with BusyPoll 0.55-0.65 µs.
package shm
