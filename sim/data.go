package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/sim/userplane"
)

// Procedure names the data steps record (report.Recorder).
const (
	// ProcPing: one sample per echo reply (its round-trip time), one
	// failure per lost request.
	ProcPing = "ping"
	// ProcTransfer: one sample per session transfer (the time to send it),
	// a failure for a transfer that could not send everything (or, with
	// TransferEcho, lost datagrams).
	ProcTransfer = "transfer"
)

// DataResult sums the ping and transfer steps over all UEs and sessions.
// Nothing is left out: a request without a reply is lost, whether the
// uplink failed, the network dropped it or the target did not answer.
type DataResult struct {
	Sessions int // PDU sessions established

	PingSent, PingReceived, PingLost, PingDuplicates int

	TransferSessions        int
	TransferPacketsSent     int64
	TransferBytesSent       int64 // UDP payload bytes handed to the sessions
	TransferSendErrors      int64
	TransferPacketsReceived int64 // echoed back (TransferEcho)
	TransferBytesReceived   int64
	TransferLost            int64 // with TransferEcho: not echoed; else send errors
	// TransferBps is the sum over sessions of the offered uplink rate
	// (payload bits over each session's sending time).
	TransferBps float64
}

// establish runs the "session" step: one PDU session per DNN.
func (r *runner) establish(ctx context.Context, su *simUE) error {
	var slice *identity.SNSSAI
	if len(r.cfg.Slices) > 0 {
		s := r.cfg.Slices[0]
		slice = &s
	}
	for _, dnn := range r.cfg.DNNs {
		s, err := su.u.EstablishSession(ctx, ue.SessionRequest{DNN: dnn, SNSSAI: slice})
		if err != nil {
			return err
		}
		su.sessions = append(su.sessions, s)
		out := SessionOutcome{ID: s.ID, DNN: s.DNN, Address: s.Address.String(), QFI: s.QFI}
		if r.cfg.TUN {
			tun, err := r.openTUN(su, s)
			if err != nil {
				su.established = append(su.established, out)
				return err
			}
			out.TUN = tun.Name()
		}
		su.established = append(su.established, out)
		r.mu.Lock()
		r.data.Sessions++
		r.mu.Unlock()
		if r.cfg.OnSession != nil {
			r.cfg.OnSession(su.u.SUPI(), out)
		}
	}
	return nil
}

// openTUN gives session s a TUN device fed into its uplink, and makes the
// TUN the taker of its downlink.
func (r *runner) openTUN(su *simUE, s ue.Session) (*userplane.TUN, error) {
	n := r.tunSeq.Add(1) - 1
	tun, err := userplane.OpenTUN(userplane.TUNConfig{
		Name:  fmt.Sprintf("%s%d", r.cfg.TUNPrefix, n),
		Addr:  s.Address,
		Table: r.cfg.TUNTable + int(n),
	})
	if err != nil {
		return nil, fmt.Errorf("sim: session %d: %w", s.ID, err)
	}
	if su.tuns == nil {
		su.tuns = make(map[uint8]*userplane.TUN)
	}
	su.tuns[s.ID] = tun
	id := s.ID
	go func() {
		if err := tun.Serve(func(p []byte) error { return su.u.SendData(id, p) }); err != nil {
			r.log.Warn("tun", "dev", tun.Name(), "err", err)
		}
	}()
	if err := su.u.SetSink(id, tun); err != nil {
		return tun, fmt.Errorf("sim: session %d: %w", id, err)
	}
	r.log.Info("session tun up", "supi", su.u.SUPI(), "dev", tun.Name(), "addr", s.Address)
	return tun, nil
}

// liveSessions returns su's sessions that the UE still has.
func liveSessions(su *simUE) []ue.Session {
	var out []ue.Session
	for _, s := range su.sessions {
		if cur, ok := su.u.Session(s.ID); ok {
			out = append(out, cur)
		}
	}
	return out
}

// ping runs the "ping" step: echo requests through every session. The UE
// fails the step only if some session got no reply at all; every lost
// request is counted as a ping failure.
func (r *runner) ping(ctx context.Context, su *simUE) error {
	sessions := liveSessions(su)
	if len(sessions) == 0 {
		return errors.New("sim: ping: no PDU session")
	}
	wait := r.cfg.PingTimeout
	if r.cfg.NoDownlink != "" {
		// No reply is expected: waiting the full timeout for each UE
		// would only slow the run (one that comes in time still counts).
		wait = min(wait, r.cfg.PingInterval)
	}
	var errs []error
	for _, s := range sessions {
		p, err := userplane.NewPinger(userplane.PingConfig{
			Src: s.Address, Dst: r.cfg.DataTarget,
			ID:       uint16(su.index<<4 | int(s.ID)),
			Count:    r.cfg.PingCount,
			Interval: r.cfg.PingInterval,
			Timeout:  wait,
		})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if err := su.u.SetProbe(s.ID, p); err != nil {
			errs = append(errs, fmt.Errorf("sim: ping via session %d: %w", s.ID, err))
			continue
		}
		id := s.ID
		res, err := p.Run(ctx, func(pkt []byte) error { return su.u.SendData(id, pkt) })
		su.u.SetProbe(s.ID, nil)
		for _, rtt := range res.RTTs {
			r.rec.Observe(ProcPing, rtt)
		}
		if r.cfg.NoDownlink == "" {
			// Without a downlink a missing reply says nothing about the
			// core; only the uplink is checked below.
			for range res.Lost {
				r.rec.Fail(ProcPing)
			}
		}
		r.mu.Lock()
		r.data.PingSent += res.Sent
		r.data.PingReceived += res.Received
		r.data.PingLost += res.Lost
		r.data.PingDuplicates += res.Duplicates
		r.mu.Unlock()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("sim: ping via session %d: %w", s.ID, err))
		case r.cfg.NoDownlink != "" && (res.Sent == 0 || res.SendErrors > 0):
			errs = append(errs, fmt.Errorf("sim: ping %s via session %d (%s): %d requests sent, %d send errors",
				r.cfg.DataTarget, s.ID, s.Address, res.Sent, res.SendErrors))
		case r.cfg.NoDownlink == "" && res.Received == 0:
			errs = append(errs, fmt.Errorf("sim: ping %s via session %d (%s): no reply to %d requests (%d send errors)",
				r.cfg.DataTarget, s.ID, s.Address, res.Sent, res.SendErrors))
		}
	}
	return errors.Join(errs...)
}

// transfer runs the "transfer" step: a UDP stream through every session.
func (r *runner) transfer(ctx context.Context, su *simUE) error {
	sessions := liveSessions(su)
	if len(sessions) == 0 {
		return errors.New("sim: transfer: no PDU session")
	}
	var errs []error
	for _, s := range sessions {
		tr, err := userplane.NewTransfer(userplane.TransferConfig{
			Src: s.Address, Dst: r.cfg.DataTarget,
			SrcPort: 40000 + uint16(s.ID), DstPort: r.cfg.TransferPort,
			Bytes: r.cfg.TransferBytes, Size: r.cfg.TransferSize, Rate: r.cfg.TransferRate,
			Echo: r.cfg.TransferEcho,
		})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if err := su.u.SetProbe(s.ID, tr); err != nil {
			errs = append(errs, fmt.Errorf("sim: transfer via session %d: %w", s.ID, err))
			continue
		}
		// The step gets the procedure timeout on top of the paced duration.
		limit := r.cfg.Timeout
		if r.cfg.TransferRate > 0 {
			limit += time.Duration(float64(r.cfg.TransferBytes) * 8 / float64(r.cfg.TransferRate) * float64(time.Second))
		}
		tctx, cancel := context.WithTimeout(ctx, limit)
		id := s.ID
		res, err := tr.Run(tctx, func(pkt []byte) error { return su.u.SendData(id, pkt) })
		cancel()
		su.u.SetProbe(s.ID, nil)
		ok := err == nil && res.SendErrors == 0 && (!r.cfg.TransferEcho || res.Lost == 0)
		if ok {
			r.rec.Observe(ProcTransfer, res.Duration)
		} else {
			r.rec.Fail(ProcTransfer)
		}
		r.mu.Lock()
		r.data.TransferSessions++
		r.data.TransferPacketsSent += res.PacketsSent
		r.data.TransferBytesSent += res.BytesSent
		r.data.TransferSendErrors += res.SendErrors
		r.data.TransferPacketsReceived += res.PacketsReceived
		r.data.TransferBytesReceived += res.BytesReceived
		r.data.TransferLost += res.Lost
		r.data.TransferBps += res.UplinkBps()
		r.mu.Unlock()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("sim: transfer via session %d: %w", s.ID, err))
		case res.PacketsSent == 0:
			errs = append(errs, fmt.Errorf("sim: transfer via session %d: nothing sent (%d send errors)", s.ID, res.SendErrors))
		case r.cfg.TransferEcho && res.PacketsReceived == 0:
			errs = append(errs, fmt.Errorf("sim: transfer via session %d: nothing echoed by %s:%d", s.ID, r.cfg.DataTarget, r.cfg.TransferPort))
		}
	}
	return errors.Join(errs...)
}

// release runs the "release" step: UE-requested release of every session.
func (r *runner) release(ctx context.Context, su *simUE) error {
	var errs []error
	for _, s := range su.u.Sessions() {
		if err := su.u.ReleaseSession(ctx, s.ID); err != nil {
			errs = append(errs, err)
		}
		r.closeTUN(su, s.ID)
	}
	su.sessions = nil
	return errors.Join(errs...)
}

// dropSessions forgets su's sessions and TUNs (deregistration released them).
func (r *runner) dropSessions(su *simUE) {
	for id := range su.tuns {
		r.closeTUN(su, id)
	}
	su.sessions = nil
}

func (r *runner) closeTUN(su *simUE, id uint8) {
	tun := su.tuns[id]
	if tun == nil {
		return
	}
	delete(su.tuns, id)
	if err := tun.Close(); err != nil {
		r.log.Warn("close tun", "dev", tun.Name(), "err", err)
	}
}

// closeTUNs removes every TUN left at the end of a run.
func (r *runner) closeTUNs() {
	for _, su := range r.ues {
		if su != nil {
			r.dropSessions(su)
		}
	}
}
