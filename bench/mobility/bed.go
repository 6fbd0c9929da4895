// Package mobility runs the mobility experiments of the L25GC papers
// (paging, handover: L25GC §5.3, Tables 1-2, Figs 13-14; L25GC+'s
// concurrent paging) against a tern core in this process: real NGAP over
// SCTP (userspace, over UDP on loopback), real PFCP rules in the embedded
// UPF, real GTP-U on N3 to simulated gNBs (package sim). The data network
// is in-process too: a sequence-numbered, timestamped downlink stream goes
// into the UPF through upf.UPF.InjectDownlink, the N6 of an in-process
// data network, so no TUN device (and no root) is needed, and each
// packet's one-way delay from the data network to the UE is exact (one
// clock).
//
// Every experiment measures, in the same run, the reference it is judged
// against: the stream's one-way delay while the UE is connected and
// nothing happens (the baseline). Procedure windows are those of
// docs/benchmarks.md, taken by the simulator just before the
// SCTP send of the NGAP messages that bound them.
package mobility

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
)

// bedConfig shapes one test bed.
type bedConfig struct {
	UEs  int
	GNBs int
	// HandoverData is the SMF's handover mode ("forwarding" or "smart").
	HandoverData string
	// N3ReadBuffer is the gNBs' N3 socket receive buffer (default
	// DefaultGNBReadBuffer).
	N3ReadBuffer int
	Log          *slog.Logger
}

// DefaultGNBReadBuffer is the simulated gNBs' N3 receive buffer in the
// experiments, the UPF's own N3 buffer: with the system's default (about
// 200 KiB, some 270 stream packets) a gNB reader descheduled for 30 ms on
// a loaded machine overflowed it, and the simulator, not the core, lost
// packets (issue 37).
const DefaultGNBReadBuffer = 4 << 20

// bed is a core with its gNBs and UEs.
type bed struct {
	core *core.Core
	dir  string
	gnbs []*gnb.GNB
	ues  []*benchUE
	rec  *report.Recorder
	log  *slog.Logger
}

// benchUE is one UE with its session's address and stream.
type benchUE struct {
	u      *ue.UE
	port   *gnb.Port
	addr   netip.Addr
	psi    uint8
	stream *Stream
}

// dnHost is the data network host the stream comes from.
var dnHost = netip.MustParseAddrPort("192.0.2.1:9000")

// newBed starts a core (in-process, embedded UPF without N6 devices) and
// gNB i in TA i+1 (so that every move between gNBs is a move between TAs,
// with a mobility registration update, as the N2 handover window of
// benchmarks.md assumes), and builds the UEs on gNB 0.
func newBed(ctx context.Context, c bedConfig) (*bed, error) {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp("", "tern-bench-mobility-")
	if err != nil {
		return nil, err
	}
	if c.N3ReadBuffer <= 0 {
		c.N3ReadBuffer = DefaultGNBReadBuffer
	}
	b := &bed{dir: dir, rec: report.NewRecorder(), log: log}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	cfg := config.Default()
	cfg.Log.Level = "error"
	cfg.Store.Path = filepath.Join(dir, "subscribers.db")
	cfg.Store.DemoSubscribers = c.UEs
	cfg.UPF.NoN6 = true
	cfg.UPF.N3Addr = "127.0.0.1:0"
	port, err := freeport.UDP()
	if err != nil {
		return nil, err
	}
	cfg.AMF.SCTP.UDPPort = port
	if c.HandoverData != "" {
		cfg.SMF.Mobility.HandoverData = c.HandoverData
	}
	cfg.AMF.TAIs = nil
	for i := range c.GNBs {
		cfg.AMF.TAIs = append(cfg.AMF.TAIs, amf.TAIConfig{PLMN: "20893", TAC: uint32(i + 1), Slices: []string{"1-010203", "1"}})
	}
	if b.core, err = core.New(cfg, log); err != nil {
		return nil, fmt.Errorf("bench: core: %w", err)
	}
	if err := b.core.Start(ctx); err != nil {
		return nil, fmt.Errorf("bench: core: %w", err)
	}
	sc := sim.DefaultConfig()
	for i := range c.GNBs {
		gc := gnb.Config{AMFAddr: b.core.N2Addr(), Transport: cfg.AMF.SCTP, GNBID: uint32(100 + i),
			PLMN: sc.PLMN, TAC: uint32(i + 1), Slices: sc.Slices, N3PeerPort: b.core.UPF.N3Addr().Port(),
			N3ReadBuffer: c.N3ReadBuffer, Logger: log}
		var g *gnb.GNB
		for try := 0; ; try++ {
			// Another process may hold GTP-U on the address drawn: draw
			// again.
			gc.N3Addr = netip.AddrPortFrom(freeport.Loopback(), gtpu.Port).String()
			g, err = gnb.Dial(ctx, gc)
			if err == nil || !errors.Is(err, syscall.EADDRINUSE) || try == 8 {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("bench: gNB %d: %w", i, err)
		}
		b.gnbs = append(b.gnbs, g)
	}
	sc.Timeout = 10 * time.Second
	for i := range c.UEs {
		u, err := sc.NewUE(i, b.rec, log)
		if err != nil {
			return nil, err
		}
		port := b.gnbs[0].NewPort(u)
		u.Attach(port)
		b.ues = append(b.ues, &benchUE{u: u, port: port})
	}
	ok = true
	return b, nil
}

// connect registers every UE and gives it a PDU session whose downlink
// goes to a stream of pps packets of size bytes.
func (b *bed) connect(ctx context.Context, pps, size int) error {
	for _, bu := range b.ues {
		if err := bu.u.Register(ctx); err != nil {
			return fmt.Errorf("bench: register: %w", err)
		}
		s, err := bu.u.EstablishSession(ctx, ue.SessionRequest{DNN: "internet"})
		if err != nil {
			return fmt.Errorf("bench: session: %w", err)
		}
		bu.addr, bu.psi = s.Address, s.ID
		bu.stream = NewStream(b.core.UPF.InjectDownlink, dnHost, netip.AddrPortFrom(s.Address, 9000), pps, size)
		if err := bu.u.SetSink(s.ID, bu.stream); err != nil {
			return err
		}
	}
	return nil
}

// Close stops everything.
func (b *bed) Close() {
	for _, g := range b.gnbs {
		g.Close()
	}
	if b.core != nil {
		b.core.Close()
	}
	os.RemoveAll(b.dir)
}
