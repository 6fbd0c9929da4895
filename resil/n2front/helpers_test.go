package n2front

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// wait bounds waits for what must happen; generous for a loaded machine.
const wait = 10 * time.Second

var testPLMN = identity.PLMN{MCC: "208", MNC: "93"}

func encode(t testing.TB, m ngap.Message) []byte {
	t.Helper()
	b, err := ngap.Encode(m)
	if err != nil {
		t.Fatalf("encode %T: %v", m, err)
	}
	return b
}

func setupRequest(t testing.TB) []byte {
	return encode(t, &ngap.NGSetupRequest{
		GlobalRANNodeID: ngap.GlobalGNBID{PLMN: testPLMN, GNBID: 1, BitLen: 22},
		RANNodeName:     "front-test",
		SupportedTAs: []ngap.SupportedTA{{TAC: 1, BroadcastPLMNs: []ngap.BroadcastPLMN{
			{PLMN: testPLMN, Slices: []identity.SNSSAI{{SST: 1, SD: identity.NoSD}}}}}},
		DefaultPagingDRX: ngap.PagingDRX128,
	})
}

func setupResponse(t testing.TB) []byte {
	return encode(t, &ngap.NGSetupResponse{
		AMFName:             "tern-amf",
		ServedGUAMIs:        []identity.GUAMI{{PLMN: testPLMN, AMFID: identity.AMFID{RegionID: 1, SetID: 1, Pointer: 1}}},
		RelativeAMFCapacity: 255,
		PLMNSupport:         []ngap.PLMNSupport{{PLMN: testPLMN, Slices: []identity.SNSSAI{{SST: 1, SD: identity.NoSD}}}},
	})
}

// uplinkNAS is the i-th UE message of a test: its NAS PDU says i.
func uplinkNAS(t testing.TB, i int) []byte {
	return encode(t, &ngap.UplinkNASTransport{AMFUENGAPID: 1, RANUENGAPID: 1,
		NASPDU: []byte(fmt.Sprintf("uplink %d", i)),
		UserLocation: ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 1},
			TAI: identity.TAI{PLMN: testPLMN, TAC: 1}}})
}

func downlinkNAS(t testing.TB, s string) []byte {
	return encode(t, &ngap.DownlinkNASTransport{AMFUENGAPID: 1, RANUENGAPID: 1, NASPDU: []byte(s)})
}

// initCounter counts the INIT packets a listener receives.
type initCounter struct{ n atomic.Int64 }

func (c *initCounter) Packet(outbound bool, _, _ netip.AddrPort, b []byte) {
	if !outbound && len(b) > 12 && b[12] == 1 { // RFC 9260 §3.3.2: chunk type 1
		c.n.Add(1)
	}
}

// rig is a front with a userspace SCTP listener and a gNB association.
type rig struct {
	t     testing.TB
	front *Front
	path  string
	inits *initCounter
	cfg   sctp.Config
	gnb   sctp.Conn
	down  chan sctp.Message // the gNB's received messages
}

func newFront(t testing.TB, mutate func(*Config)) (*Front, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "units.sock")
	cfg := Config{UnitPath: path}
	if mutate != nil {
		mutate(&cfg)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

func newRig(t testing.TB, mutate func(*Config)) *rig {
	t.Helper()
	f, path := newFront(t, mutate)
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, front: f, path: path, inits: new(initCounter),
		cfg: sctp.Config{Transport: sctp.TransportUDP, UDPPort: port}}
	lcfg := r.cfg
	lcfg.Tap = r.inits
	l, err := sctp.Listen(lcfg, "127.0.0.1:38412")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if err := f.Serve(l); err != nil {
		t.Fatal(err)
	}
	r.gnb, r.down = r.dialGNB()
	return r
}

// dialGNB opens a gNB association to the front.
func (r *rig) dialGNB() (sctp.Conn, chan sctp.Message) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := sctp.Dial(ctx, r.cfg, "127.0.0.1:38412")
	if err != nil {
		r.t.Fatalf("Dial: %v", err)
	}
	down := make(chan sctp.Message, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(down)
		for {
			m, err := c.Recv()
			if err != nil {
				return
			}
			down <- m
		}
	}()
	r.t.Cleanup(func() { c.Close(); <-done })
	return c, down
}

func (r *rig) send(b []byte) {
	r.t.Helper()
	if err := r.gnb.Send(0, ngap.PPID, b); err != nil {
		r.t.Fatalf("gNB send: %v", err)
	}
}

// gnbRecv returns the gNB's next message.
func gnbRecv(t testing.TB, down chan sctp.Message) sctp.Message {
	t.Helper()
	select {
	case m, ok := <-down:
		if !ok {
			t.Fatal("the gNB's association ended")
		}
		return m
	case <-time.After(wait):
		t.Fatal("the gNB received nothing")
	}
	return sctp.Message{}
}

// gnbQuiet checks the gNB receives nothing for a while.
func gnbQuiet(t testing.TB, down chan sctp.Message, d time.Duration) {
	t.Helper()
	select {
	case m := <-down:
		t.Fatalf("the gNB received % x", m.Data)
	case <-time.After(d):
	}
}

// unit is the unit side of a test: a Link and its first association.
type unit struct {
	t      testing.TB
	link   *Link
	conn   sctp.Conn
	resume Resume
	in     chan sctp.Message
	end    chan error
}

func dialUnit(t testing.TB, path string, epoch uint64) *unit {
	t.Helper()
	l, err := Dial(path, epoch)
	if err != nil {
		t.Fatalf("Dial epoch %d: %v", epoch, err)
	}
	t.Cleanup(func() { l.Close() })
	c, res, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	u := &unit{t: t, link: l, conn: c, resume: res, in: make(chan sctp.Message, 1024), end: make(chan error, 1)}
	go func() {
		for {
			m, err := c.Recv()
			if err != nil {
				u.end <- err
				close(u.in)
				return
			}
			u.in <- m
		}
	}()
	return u
}

func (u *unit) recv() sctp.Message {
	u.t.Helper()
	select {
	case m, ok := <-u.in:
		if !ok {
			u.t.Fatalf("the unit's association ended: %v", <-u.end)
		}
		return m
	case <-time.After(wait):
		u.t.Fatal("the unit received nothing")
	}
	return sctp.Message{}
}

// expect receives the next message and checks its bytes.
func (u *unit) expect(want []byte) sctp.Message {
	u.t.Helper()
	m := u.recv()
	if !bytes.Equal(m.Data, want) {
		u.t.Fatalf("unit received % x, want % x", m.Data, want)
	}
	if m.Stamp == 0 {
		u.t.Fatal("message without a stamp")
	}
	return m
}

func (u *unit) ack(stamps ...uint64) {
	for _, s := range stamps {
		u.conn.(sctp.Acker).Ack(s)
	}
}

func (u *unit) send(b []byte) {
	u.t.Helper()
	if err := u.conn.Send(0, ngap.PPID, b); err != nil {
		u.t.Fatalf("unit send: %v", err)
	}
}

// eventually polls cond until it holds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(wait); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func isLinkDown(err error) bool { return errors.Is(err, ErrLinkDown) }
