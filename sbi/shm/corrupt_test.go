package shm

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// Records scribbled directly into the mapping are rejected and counted, and
// the rings keep working. The test writes as the producer would (holding
// the producer's lock, so each ring keeps one producer).
func TestCorruptRequestRecords(t *testing.T) {
	cfg := testConfig(t)
	s := listen(t, cfg, "smf", echoHandler)
	c := dial(t, cfg, "smf")
	cn := c.cur.Load()
	call := func() {
		t.Helper()
		resp, _, err := c.Call(ctxFor(t, time.Second), opEcho, []byte("ok"), nil)
		if err != nil || string(resp) != "ok" {
			t.Fatalf("call after corruption: %q, %v", resp, err)
		}
	}
	write := func(fill func(slot []byte)) {
		c.mu.Lock()
		defer c.mu.Unlock()
		slot, tail, ok := cn.req.reserve()
		if !ok {
			t.Fatal("request ring full")
		}
		fill(slot)
		cn.req.publish(tail)
	}
	good := record{id: 1<<idxBits | 0, gen: cn.gen, op: opEcho}
	write(func(slot []byte) { // header check mismatch
		encodeRecord(slot, good, []byte("hi"))
		slot[recOp] ^= 0xff
	})
	write(func(slot []byte) { // length beyond the slot, with a valid check
		encodeRecord(slot, good, nil)
		binary.LittleEndian.PutUint32(slot[recLen:], 1<<30)
		binary.LittleEndian.PutUint32(slot[recCheck:], headerCheck(1<<30, good))
	})
	write(func(slot []byte) { // a record of an earlier connection
		stale := good
		stale.gen--
		encodeRecord(slot, stale, []byte("hi"))
	})
	write(func(slot []byte) { // garbage
		for i := range slot {
			slot[i] = byte(i * 7)
		}
	})
	eventually(t, time.Second, "server counts 4 corrupt records", func() bool { return s.Stats().Corrupt == 4 })
	call()

	// Impossible indices: the server skips to the producer's position.
	c.mu.Lock()
	cn.req.tail.Store(cn.req.head.Load() + 1000)
	cn.req.nudge()
	c.mu.Unlock()
	eventually(t, time.Second, "server resyncs", func() bool { return s.Stats().Corrupt == 5 })
	call()
	if st := c.Stats(); st.Corrupt != 0 || st.Late != 0 {
		t.Errorf("client stats %+v", st)
	}
}

func TestCorruptResponseRecords(t *testing.T) {
	cfg := testConfig(t)
	s := listen(t, cfg, "smf", echoHandler)
	c := dial(t, cfg, "smf")
	cn := c.cur.Load()
	ch := s.chans[cn.ch]
	write := func(fill func(slot []byte)) {
		ch.respMu.Lock()
		defer ch.respMu.Unlock()
		slot, tail, ok := ch.resp.reserve()
		if !ok {
			t.Fatal("response ring full")
		}
		fill(slot)
		ch.resp.publish(tail)
	}
	write(func(slot []byte) { copy(slot, bytes.Repeat([]byte{0xff}, len(slot))) })
	write(func(slot []byte) { // valid, but for an ID never issued
		encodeRecord(slot, record{id: 5, gen: cn.gen}, []byte("x"))
	})
	write(func(slot []byte) { // valid, for a call nobody waits for
		encodeRecord(slot, record{id: 77<<idxBits | 3, gen: cn.gen}, []byte("x"))
	})
	// Truncated: says more than the slot holds.
	write(func(slot []byte) {
		r := record{id: 1<<idxBits | 0, gen: cn.gen}
		encodeRecord(slot, r, nil)
		n := uint32(len(slot))
		binary.LittleEndian.PutUint32(slot[recLen:], n)
		binary.LittleEndian.PutUint32(slot[recCheck:], headerCheck(n, r))
	})
	resp, _, err := c.Call(ctxFor(t, time.Second), opEcho, []byte("ok"), nil)
	if err != nil || string(resp) != "ok" {
		t.Fatalf("call = %q, %v", resp, err)
	}
	if st := c.Stats(); st.Corrupt != 3 || st.Late != 1 {
		t.Errorf("client stats %+v, want 3 corrupt and 1 late", st)
	}
	// Impossible indices on the response ring.
	ch.respMu.Lock()
	ch.resp.tail.Store(ch.resp.head.Load() - 5)
	ch.respMu.Unlock()
	for range 3 {
		if _, _, err := c.Call(ctxFor(t, time.Second), opEcho, []byte("ok"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats(); st.Corrupt != 4 {
		t.Errorf("client stats %+v, want a resync", st)
	}
}

// A pool file with a bad header is not attached to.
func TestCorruptPoolHeader(t *testing.T) {
	cfg := testConfig(t)
	s := listen(t, cfg, "smf", echoHandler)
	s.pool.mem.u32(hdrSlotBytes).Store(100)
	c := dial(t, cfg, "smf")
	if c.Connected() {
		t.Fatal("attached to a pool with a bad geometry")
	}
	if _, err := c.connect(); err == nil {
		t.Fatal("connect succeeded")
	}
	s.pool.mem.u32(hdrSlotBytes).Store(uint32(cfg.SlotBytes))
	eventually(t, time.Second, "connect once repaired", c.Connected)
}
