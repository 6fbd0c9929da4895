package n2front

import (
	"bytes"
	"testing"
	"time"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// BenchmarkRoundTrip is one request and its answer, gNB → front → unit
// (stamped, logged, acknowledged) → front → gNB, over userspace SCTP; with
// Direct, the same gNB talks to an echo server on its association, the
// cost the front adds to.
func BenchmarkRoundTrip(b *testing.B) {
	up, down := uplinkNAS(b, 1), downlinkNAS(b, "answer")
	b.Run("front", func(b *testing.B) {
		r := newRig(b, nil)
		u := dialUnit(b, r.path, 1)
		b.ResetTimer()
		for range b.N {
			r.send(up)
			m := u.recv()
			u.ack(m.Stamp)
			u.send(down)
			if m := gnbRecv(b, r.down); !bytes.Equal(m.Data, down) {
				b.Fatal("wrong answer")
			}
		}
		b.StopTimer()
		eventually(b, "acks", func() bool { return r.front.Stats().Logged == 0 })
	})
	b.Run("direct", func(b *testing.B) {
		r := newRig(b, nil)
		r.front.Close() // only the listener setup is reused below
		l, err := sctp.Listen(r.cfg, "127.0.0.1:38412")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			sctp.Serve(c, func(m sctp.Message) { c.Send(0, ngap.PPID, down) })
		}()
		g, in := r.dialGNB()
		b.ResetTimer()
		for range b.N {
			g.Send(0, ngap.PPID, up)
			select {
			case <-in:
			case <-time.After(wait):
				b.Fatal("no answer")
			}
		}
	})
}
