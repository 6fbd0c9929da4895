// Package udpstat reads the kernel's counters of one UDP socket: the
// datagrams it dropped for the socket and the bytes its receive queue
// holds. A bench that counts packets lost between two of its own endpoints
// needs them: a receive buffer that overflows while the reader is
// descheduled drops datagrams that no counter of the program sees.
package udpstat

// Counters are one socket's kernel counters.
type Counters struct {
	// Drops counts datagrams the kernel dropped for the socket: receive
	// buffer full (SO_RCVBUF), memory pressure, bad checksum, socket
	// filter (sk_drops: /proc/net/udp's "drops", the count SO_RXQ_OVFL
	// reports too).
	Drops uint64
	// RxQueue is the bytes the receive queue holds now, datagrams with
	// the kernel's overhead (sk_rmem_alloc: /proc/net/udp's rx_queue).
	RxQueue uint64
}
