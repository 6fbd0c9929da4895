// SPDX-FileCopyrightText: 2026 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

// tern patch: low-latency I/O for request/response signalling (NGAP).
//
// pion moves every packet through goroutine handoffs: a user write wakes
// writeLoop, a received message wakes a per-stream reader, and a SACK is a
// packet of its own. For N2, where each message is small and answered
// within tens of microseconds, those handoffs and extra packets cost more
// than the protocol work. The three options below remove them; each is off
// by default, so pion's own behaviour and tests are unchanged.
//
//   - WithDirectWrite: Stream.WriteSCTP, and the read loop after each
//     inbound packet, put what is ready on the wire themselves when no other
//     goroutine is writing, instead of waking writeLoop. writeMu serialises
//     the gather-and-write step of every writer, so packets still leave in
//     the order their TSNs were assigned.
//   - WithMessageHandler: complete user messages are handed to a callback
//     on the read loop right after the packet that completed them, in
//     arrival order across streams (per-stream order is kept, as SCTP
//     requires), instead of waking one reader goroutine per stream.
//   - WithSackBundling: a pending SACK rides in the first outgoing DATA
//     packet (RFC 9260 §6.2 allows bundling a SACK with outbound DATA;
//     control chunks precede DATA, §6.10) instead of going alone later.

import "sync/atomic"

// MessageHandler receives one complete user message. data is owned by the
// handler (pion does not reuse it). It runs on the association's read loop,
// without the association lock held: it may call Stream.WriteSCTP, and it
// must not block for long, since no further packet is processed meanwhile.
type MessageHandler func(streamIdentifier uint16, ppi PayloadProtocolIdentifier, data []byte)

// WithDirectWrite makes writers send on the calling goroutine when no other
// write is in progress (see the file comment). tern patch.
func WithDirectWrite() AssociationOption {
	return sharedOption(func(c *Config) error {
		c.directWrite = true

		return nil
	})
}

// WithMessageHandler delivers complete messages to h instead of queueing
// them for Stream.Read/ReadSCTP, which then never return data. Streams are
// still announced by AcceptStream. tern patch.
func WithMessageHandler(h MessageHandler) AssociationOption {
	return sharedOption(func(c *Config) error {
		if h != nil {
			c.onMessage = &h
		}

		return nil
	})
}

// WithSackBundling bundles a pending SACK with outgoing DATA. tern patch.
func WithSackBundling() AssociationOption {
	return sharedOption(func(c *Config) error {
		c.bundleSack = true

		return nil
	})
}

func derefHandler(h *MessageHandler) MessageHandler {
	if h == nil {
		return nil
	}

	return *h
}

// lowLatency is the Association state of the options above.
type lowLatency struct {
	directWrite bool
	bundleSack  bool
	onMessage   MessageHandler

	// inInbound is set while the read loop handles a packet; wakes of the
	// writer requested meanwhile become one flush at the end of it.
	inInbound   atomic.Bool
	flushWanted atomic.Bool

	// readable lists streams that got a complete message during the
	// current packet; deliveries are the messages taken from them. Both
	// are guarded by the association lock and used by the read loop only.
	readable   []*Stream
	deliveries []delivery
}

type delivery struct {
	stream uint16
	ppi    PayloadProtocolIdentifier
	data   []byte
}

// wakeWriter asks for outbound packets to be written. In direct mode a wake
// during inbound processing is deferred to the flush at its end (one write
// pass instead of a goroutine handoff per chunk handled).
func (a *Association) wakeWriter() {
	if a.ll.directWrite {
		// Publish the request before reading inInbound; endInbound clears
		// inInbound before collecting requests, so one of the two sees it.
		a.ll.flushWanted.Store(true)
		if a.ll.inInbound.Load() {
			return
		}
	}
	select {
	case a.awakeWriteLoopCh <- struct{}{}:
	default:
	}
}

// beginInbound marks the read loop as handling a packet.
func (a *Association) beginInbound() {
	if a.ll.directWrite {
		a.ll.inInbound.Store(true)
	}
}

// endInbound delivers the messages the packet completed, then writes what
// handling it queued (SACK, replies).
func (a *Association) endInbound() {
	if a.ll.onMessage != nil {
		a.lock.Lock()
		ds := a.ll.deliveries
		a.ll.deliveries = nil
		a.lock.Unlock()
		for _, d := range ds {
			a.ll.onMessage(d.stream, d.ppi, d.data)
		}
	}
	if !a.ll.directWrite {
		return
	}
	a.ll.inInbound.Store(false)
	if a.ll.flushWanted.Swap(false) {
		a.flushDirect()
	}
}

// flushDirect writes what is ready on the calling goroutine, or leaves it to
// the goroutine already writing (or to writeLoop for anything but plain
// established-state traffic: ABORT, SHUTDOWN and closing stay there).
func (a *Association) flushDirect() {
	if !a.writeMu.TryLock() {
		// The holder gathers again after it finishes only if woken.
		a.awakeWriteLoopDirect()

		return
	}
	a.lock.Lock()
	if a.getState() != established || a.willSendAbort {
		a.lock.Unlock()
		a.writeMu.Unlock()
		a.awakeWriteLoopDirect()

		return
	}
	rawPackets, _ := a.gatherOutboundLocked()
	a.lock.Unlock()
	err := a.writePackets(rawPackets)
	a.writeMu.Unlock()
	if err != nil {
		// As writeLoop does: a failed write ends the association.
		a.log.Warnf("[%s] failed to write packets on netConn: %v", a.name, err)
		_ = a.closeNetConn()
	}
}

// awakeWriteLoopDirect wakes writeLoop unconditionally.
func (a *Association) awakeWriteLoopDirect() {
	select {
	case a.awakeWriteLoopCh <- struct{}{}:
	default:
	}
}

// markReadable records that s has a complete message to deliver. The caller
// holds the association lock (it runs inside handleChunk).
func (a *Association) markReadable(s *Stream) {
	for _, r := range a.ll.readable {
		if r == s {
			return
		}
	}
	a.ll.readable = append(a.ll.readable, s)
}

// collectReadable moves the complete messages of the streams marked during
// this packet into deliveries. The caller holds the association lock.
func (a *Association) collectReadable() {
	for i, s := range a.ll.readable {
		s.lock.Lock()
		for {
			data, ppi, ok := s.reassemblyQueue.readMessage()
			if !ok {
				break
			}
			a.ll.deliveries = append(a.ll.deliveries, delivery{stream: s.streamIdentifier, ppi: ppi, data: data})
		}
		s.lock.Unlock()
		a.ll.readable[i] = nil
	}
	a.ll.readable = a.ll.readable[:0]
}

// bundleSackInto puts a pending SACK in front of the DATA chunks of p when it
// fits the MTU (RFC 9260 §6.10: control chunks first). The caller holds the
// association lock.
func (a *Association) bundleSackInto(p *packet) {
	if !a.ll.bundleSack || a.ackState == ackStateIdle {
		return
	}
	sack := a.createSelectiveAckChunk()
	size := int(commonHeaderSize) + int(chunkHeaderSize) + selectiveAckHeaderSize +
		4*(len(sack.gapAckBlocks)+len(sack.duplicateTSN))
	for _, c := range p.chunks {
		if d, ok := c.(*chunkPayloadData); ok {
			size += d.chunkSizeInPacket()
		}
	}
	if size > int(a.MTU()) {
		return
	}
	a.ackState = ackStateIdle
	a.ackTimer.stop()
	a.stats.incSACKsSent()
	p.chunks = append([]chunk{sack}, p.chunks...)
}

// readMessage removes the next complete message in delivery order and
// returns its user data. A message in one chunk is returned without a copy
// (the chunk's data is a slice of the packet buffer the read loop allocated
// for this packet alone).
func (r *reassemblyQueue) readMessage() ([]byte, PayloadProtocolIdentifier, bool) {
	if r.useInterleaving || !r.isReadable() {
		if !r.isReadable() {
			return nil, 0, false
		}
		n, _, _ := r.read(nil) // sizes the message, leaves it queued
		buf := make([]byte, n)
		n, ppi, err := r.read(buf)
		if err != nil {
			return nil, 0, false
		}

		return buf[:n], ppi, true
	}
	var cset *chunkSet
	if len(r.unordered) > 0 {
		cset = r.unordered[0]
		r.unordered = r.unordered[1:]
	} else {
		cset = r.ordered[0] // isReadable: complete and in sequence
		r.ordered = r.ordered[1:]
		if cset.ssn == r.nextSSN {
			r.nextSSN++
		}
	}
	var data []byte
	if len(cset.chunks) == 1 {
		data = cset.chunks[0].userData
	} else {
		n := 0
		for _, c := range cset.chunks {
			n += len(c.userData)
		}
		data = make([]byte, 0, n)
		for _, c := range cset.chunks {
			data = append(data, c.userData...)
		}
	}
	r.subtractNumBytes(len(data))

	return data, cset.ppi, true
}
