// Package sim is tern's RAN simulator: gNBs that speak NGAP over SCTP to
// any AMF (tern's, or another 5G core) and UEs that run real 5GMM
// procedures over them, measuring each procedure with the latency windows of
// the L25GC paper (docs/benchmarks.md).
//
// Packages:
//
//   - sim/usim: the USIM (Milenage, SQN window, SUCI null/profile A/profile B)
//     and the ME's 5G AKA key derivations.
//   - sim/ue: one UE's 5GMM state machine: Register (SUCI), Reregister
//     (5G-GUTI, integrity protected with the stored context), Deregister
//     (normal or switch-off); answers Authentication (MAC failure #20, synch
//     failure #21 with AUTS), Security Mode, Identity Requests and AMF
//     retransmissions. 5GSM: EstablishSession (DNN, S-NSSAI, IPv4, SSC 1,
//     T3580), ReleaseSession (T3582), network-requested modification and
//     release; SendData/HandleData carry the sessions' IP packets. Idle
//     mode: Release (to CM-IDLE), ServiceRequest, the answer to paging,
//     uplink buffered in CM-IDLE that triggers a service request, Service
//     Reject (#9/#10: registers again), network-initiated deregistration,
//     periodic registration (T3512) and the inactivity release. Handover:
//     Handover (Xn or N2, run by the gNB port, then a mobility
//     registration update when the new TA is not in the TAI list).
//   - sim/gnb: one gNB: SCTP association, NG Setup, RAN UE NGAP ID
//     allocation, routing, Initial Context Setup and UE Context Release,
//     Paging (to the idle UE with the paged 5G-S-TMSI); PDU Session
//     Resource Setup/Modify/Release, and GTP-U on N3 (a UDP socket: UL
//     G-PDUs with a PDU Session Container, DL by TEID, Echo). Handover
//     between the gNBs of a process (Neighbours): N2 as source (Handover
//     Required, forwarding to the command's tunnel, Handover Cancel) and
//     target (Handover Request Acknowledge or Failure, Handover Notify),
//     Xn (the context handed in-process, Xn-U forwarding, Path Switch
//     Request), the target putting forwarded and new-path downlink in
//     order behind the End Marker.
//   - sim/userplane: traffic on in-memory packets (ICMP echo prober, UDP bulk
//     transfer, both counting every loss) and, with root, a TUN device per
//     session with policy routing so that ping/curl/iperf3 use it.
//   - sim (this package): Run, which builds gNBs and UEs from a Config and
//     runs a Scenario with bounded concurrency, returning per-procedure
//     summaries (report.Summary) and per-UE outcomes.
//
// Driving the whole simulator:
//
//	cfg := sim.DefaultConfig()
//	cfg.AMFAddr, cfg.UEs, cfg.Concurrency = "127.0.0.1:38412", 100, 16
//	cfg.Scenario, _ = sim.ParseScenario("register+deregister")
//	res, err := sim.Run(ctx, cfg)
//	report.WriteTable(os.Stdout, "sim", res.Summaries)
//
// Scripting single UEs (e.g. in tests: a wrong K, an SQN ahead of the
// network, a garbled message):
//
//	g, _ := gnb.Dial(ctx, gnb.Config{AMFAddr: addr, GNBID: 1, PLMN: plmn, TAC: 1, Slices: slices})
//	card, _ := usim.New(usim.Subscriber{PLMN: plmn, MSIN: "0000000001", K: k, OPc: opc, SQN: 0})
//	u, _ := ue.New(ue.Config{USIM: card, ServingPLMN: plmn, RequestedNSSAI: slices})
//	u.Attach(g.NewPort(u))
//	err := u.Register(ctx)            // *ue.AuthFailureError, *ue.RejectError, ue.ErrAuthenticationReject ...
//	err = u.Reregister(ctx)           // with the stored 5G-GUTI (from CM-IDLE: released first)
//	err = u.Deregister(ctx, false)    // normal; true = switch-off
//
// Handover between two gNBs of the process (the UE connected, with a PDU
// session):
//
//	gnb.Neighbours(g1, g2)
//	err = u.Handover(ctx, ue.HandoverXn, g2.ID()) // or ue.HandoverN2
//
// Fault injection for tests: usim.Subscriber{K: wrongK} (MAC failure #20),
// usim.Subscriber{SQN: high} (synch failure #21 with AUTS, then resync),
// (*ue.UE).SendNAS(msg, true) (a NAS PDU with a bad MAC), (*ue.UE).SendRaw
// (arbitrary NAS bytes), (*gnb.GNB).SendRaw (arbitrary NGAP bytes), with
// (*gnb.GNB).Counters (Error Indications received) and gnb.Config.OnMessage
// (every downlink NGAP message) to observe the core's answers.
// (*ue.UE).Release takes a UE to CM-IDLE (AN release);
// (*ue.UE).ServiceRequest brings it back.
//
// SUCI: Config.SUCIScheme null (default), profile A or B; without
// HNPublicKey the demo key matching `tern up`'s UDM is used.
//
// Latency windows (benchmarks.md), one report.Recorder procedure each:
// "registration" and "reregistration" from sending InitialUEMessage
// (Registration Request) to sending Registration Complete;
// "deregistration" and "deregistration-switchoff" from sending the
// Deregistration Request to sending UE Context Release Complete;
// "an-release" from UE Context Release Request to UE Context Release
// Complete (the CM-IDLE transition: step idle, before a re-registration,
// the inactivity timer); "service-request" from sending InitialUEMessage
// (Service Request) to sending Initial Context Setup Response; "paging"
// from the gNB receiving Paging to it sending the Initial Context Setup
// Response of the UE's answer; "periodic-registration" like the other
// registrations; "handover-n2" from the source sending Handover Required
// to the UE sending the Registration Complete of its registration update
// at the target (to the target sending Handover Notify when the UE stays
// in its registration area); "handover-xn" from the target sending Path
// Switch Request to that Registration Complete (to the target receiving
// Path Switch Request Acknowledge without one); "pdu-session" from sending
// the PDU Session Establishment
// Request (in UL NAS Transport) to sending PDU Session Resource Setup
// Response;
// "pdu-release" from sending the PDU Session Release Request to the later
// of PDU Session Release Complete and PDU Session Resource Release
// Response. The instants are taken just before the SCTP send of the
// encoded NGAP message. Data steps: "ping" holds one sample per echo reply
// (the RTT) and one failure per lost request; "transfer" one sample per
// session (the sending time; throughput and echoed/lost counts are in
// Result.Data).
//
// Mobility (steps handover-xn, handover-n2; scenario "handover"): the gNBs
// of a run are each other's neighbours, and each step moves every UE to
// the next gNB (round robin). Config.TACs or Config.TACStep put gNBs in
// different (or shared) TAs, so that a move may need a registration
// update; Config.HandoverEvery moves UEs in the background while any
// scenario runs (Result.Mobility), Config.HandoverInterruption is the
// time a UE spends between cells. Result.GNBs has the gNBs' handover
// counters (forwarded, held, dropped packets).
//
// Idle mode (steps idle, service): "idle" takes every UE to CM-IDLE (AN
// release, its sessions keep no user plane), "service" brings it back with
// a UE-triggered service request (type data with every session flagged in
// the Uplink data status, so that the user plane returns; signalling for a
// UE without sessions). Config.InactivityTimeout and
// Config.PeriodicRegistration (off by default) add the inactivity release
// and T3512; a UE answers paging by itself (observed as "paging").
//
// PDU sessions and data (steps session, ping, transfer, release): the
// "session" step establishes one session per Config.DNNs entry; "ping" and
// "transfer" send in-memory packets through every session to
// Config.DataTarget (the gNB's GTP-U goes to the UPF of the session's UL
// tunnel), so replies exist only where a real data network host answers
// (ICMP echo; UDP echo on port 7 for TransferEcho). With Config.TUN (root)
// every session also gets a TUN device ("uesimtun0", ...) and a rule "from
// <session address> lookup <table>", so that e.g.
// `ping -I 10.60.0.1 10.100.6.2` or `iperf3 -B 10.60.0.1 ...` runs over
// the session; Config.AfterStep is the place to run such tools mid-scenario.
//
// The simulator shares the machine with the core, so it is kept cheap: one
// reader goroutine per gNB handles all downlink and answers in place, UEs own
// no goroutines, and Run uses Concurrency worker goroutines.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/report"
	"github.com/tern5g/tern/sim/gnb"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/sim/userplane"
	"github.com/tern5g/tern/sim/usim"
)

// Result is the outcome of Run.
type Result struct {
	Summaries []report.Summary // one per procedure, sorted by name
	Recorder  *report.Recorder // the raw samples (Recorder.Samples)
	Steps     []StepResult
	UEs       []UEOutcome
	Data      DataResult // what the ping and transfer steps sent and got back
	// Mobility is the background mover's count (Config.HandoverEvery).
	Mobility MobilityResult
	// GNBs are the gNBs' counters after the last step.
	GNBs []GNBOutcome
}

// StepResult is one scenario step over all UEs.
type StepResult struct {
	Step      Step
	Procedure string        // the ue.Proc* name recorded for this step
	Wall      time.Duration // from the first UE starting to the last finishing
	OK        int
	Failed    int
	Skipped   int // UEs that had failed an earlier step
}

// UEOutcome is one UE at the end of the run.
type UEOutcome struct {
	SUPI       string
	GNB        uint32 // the gNB serving (or camped on by) the UE at the end
	GUTI       string // "" if none was assigned
	Registered bool
	FailedStep Step   // "" if every step succeeded
	Err        string // the failure, "" if none
	// Sessions are the PDU sessions the UE established during the run.
	Sessions []SessionOutcome
}

// SessionOutcome is one PDU session a UE established.
type SessionOutcome struct {
	ID      uint8
	DNN     string
	Address string
	QFI     uint8
	TUN     string // the TUN device, "" without TUN mode
}

// Failures returns the number of failed procedure runs.
func (r *Result) Failures() int {
	n := 0
	for _, s := range r.Summaries {
		n += s.Failures
	}
	return n
}

// Run connects cfg.GNBs gNBs to the AMF, creates cfg.UEs UEs spread over
// them round-robin, and runs the scenario: each step for every UE, at most
// cfg.Concurrency UEs at a time, before the next step. It returns an error
// only when the run cannot take place (bad config, a gNB cannot connect or
// is refused NG Setup); procedure failures are counted in the Result.
//
// A UE that fails a step skips the rest of the scenario, so it is
// deregistered there and then (which releases its PDU sessions) rather
// than left in the core. When ctx is cancelled, Run stops after the
// procedures in flight, deregisters every UE still registered, and returns
// the Result of what ran with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	gnbs := make([]*gnb.GNB, 0, cfg.GNBs)
	r := &runner{cfg: cfg, log: log, rec: report.NewRecorder()}
	defer func() {
		r.closeTUNs()
		for _, g := range gnbs {
			g.Close()
		}
	}()
	for i := 0; i < cfg.GNBs; i++ {
		g, err := gnb.Dial(ctx, gnb.Config{
			AMFAddr:              cfg.AMFAddr,
			Transport:            cfg.Transport,
			GNBID:                cfg.GNBID + uint32(i),
			PLMN:                 cfg.PLMN,
			TAC:                  cfg.tac(i),
			Slices:               cfg.Slices,
			N3Addr:               cfg.N3Addrs[i%len(cfg.N3Addrs)],
			N3PeerPort:           cfg.N3PeerPort,
			N3Tap:                cfg.N3Tap,
			HandoverInterruption: cfg.HandoverInterruption,
			Logger:               log,
		})
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		gnbs = append(gnbs, g)
	}
	// Every gNB of the run is a neighbour of every other.
	gnb.Neighbours(gnbs...)
	r.gnbs = gnbs

	ues := make([]*simUE, cfg.UEs)
	r.ues = ues
	for i := range ues {
		obs := &observer{rec: r.rec, on: cfg.OnProcedure}
		u, err := cfg.NewUE(i, obs, log)
		if err != nil {
			return nil, err
		}
		g := gnbs[i%len(gnbs)]
		su := &simUE{u: u, obs: obs, index: i, port: g.NewPort(u)}
		su.gnb.Store(g.ID())
		u.Attach(su.port)
		ues[i] = su
	}

	res := &Result{Recorder: r.rec}
	var mv *mover
	if cfg.HandoverEvery > 0 {
		mv = r.startMover(ctx)
	}
	for _, step := range cfg.Scenario {
		if ctx.Err() != nil {
			break
		}
		sr := r.runStep(ctx, step)
		log.Info("step done", "step", step, "ok", sr.OK, "failed", sr.Failed, "skipped", sr.Skipped, "wall", sr.Wall)
		res.Steps = append(res.Steps, sr)
		if cfg.AfterStep != nil {
			cfg.AfterStep(sr)
		}
	}
	if mv != nil {
		res.Mobility = mv.end()
	}
	if ctx.Err() != nil {
		r.cleanUpAll(ctx)
	}
	for i, g := range gnbs {
		res.GNBs = append(res.GNBs, GNBOutcome{ID: g.ID(), TAC: cfg.tac(i), Counters: g.Counters(), N3: g.N3Counters()})
	}
	res.Summaries = r.rec.Summaries()
	res.Data = r.data
	res.UEs = make([]UEOutcome, len(ues))
	for i, su := range ues {
		u := su.u
		o := UEOutcome{SUPI: u.SUPI(), GNB: su.gnb.Load(), Registered: u.Registered(), FailedStep: su.failedStep, Sessions: su.established}
		if g, ok := u.GUTI(); ok {
			o.GUTI = g.String()
		}
		if su.err != nil {
			o.Err = su.err.Error()
		}
		res.UEs[i] = o
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("sim: %w", err)
	}
	return res, nil
}

// observer hands a UE's procedure outcomes to the run's recorder, except
// while muted: the clean-up of a UE that stopped early is not part of the
// scenario and must not count in its figures.
type observer struct {
	rec   *report.Recorder
	on    func(proc string, ok bool) // Config.OnProcedure
	muted atomic.Bool
}

func (o *observer) Observe(proc string, d time.Duration) {
	if !o.muted.Load() {
		o.rec.Observe(proc, d)
		if o.on != nil {
			o.on(proc, true)
		}
	}
}

func (o *observer) Fail(proc string) {
	if !o.muted.Load() {
		o.rec.Fail(proc)
		if o.on != nil {
			o.on(proc, false)
		}
	}
}

// cleanUp deregisters su if it is registered, which releases its PDU
// sessions in the core, and closes its TUNs: a UE that stops before the
// scenario's release and deregister steps would otherwise leave them
// behind. It gets a fresh procedure timeout even when ctx is cancelled
// (Ctrl-C is when leaving nothing behind matters most). The caller holds
// su.mu.
func (r *runner) cleanUp(ctx context.Context, su *simUE) {
	su.obs.muted.Store(true)
	defer su.obs.muted.Store(false)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Timeout)
	defer cancel()
	if su.u.Registered() {
		if err := su.u.Deregister(ctx, false); err != nil {
			r.log.Warn("clean-up deregistration", "supi", su.u.SUPI(), "err", err)
		}
	}
	r.dropSessions(su)
}

// cleanUpAll runs cleanUp for every UE, cfg.Concurrency at a time (an
// interrupted run).
func (r *runner) cleanUpAll(ctx context.Context) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(r.cfg.Concurrency, len(r.ues)); w++ {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(r.ues) {
					return
				}
				su := r.ues[i]
				su.mu.Lock()
				r.cleanUp(ctx, su)
				su.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// simUE is one UE and what the run keeps about it.
type simUE struct {
	u     *ue.UE
	obs   *observer
	index int
	port  *gnb.Port
	gnb   atomic.Uint32 // the gNB ID serving it, as of its last handover
	// mu is held by a step's procedure, so that the background mover
	// (Config.HandoverEvery) leaves the UE alone meanwhile. The data
	// steps do not hold it: a handover may run under their traffic.
	mu sync.Mutex

	err        error // the step failure that stopped it
	failedStep Step

	sessions    []ue.Session // established and not yet released
	established []SessionOutcome
	tuns        map[uint8]*userplane.TUN
}

// runner holds one run's shared state.
type runner struct {
	cfg    Config
	log    *slog.Logger
	rec    *report.Recorder
	gnbs   []*gnb.GNB
	ues    []*simUE
	tunSeq atomic.Int64

	mu   sync.Mutex // guards data
	data DataResult
}

// runStep runs step for every UE that has not failed yet, with
// cfg.Concurrency workers.
func (r *runner) runStep(ctx context.Context, step Step) StepResult {
	sr := StepResult{Step: step, Procedure: stepProcedure(step)}
	var next atomic.Int64
	var ok, bad, skipped atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < min(r.cfg.Concurrency, len(r.ues)); w++ {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(r.ues) {
					return
				}
				su := r.ues[i]
				if su.err != nil {
					skipped.Add(1)
					continue
				}
				if err := r.lockedStep(ctx, su, step); err != nil {
					su.err, su.failedStep = err, step
					bad.Add(1)
					// The UE skips the rest of the scenario, its release
					// and deregister steps too.
					su.mu.Lock()
					r.cleanUp(ctx, su)
					su.mu.Unlock()
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	sr.Wall = time.Since(start)
	sr.OK, sr.Failed, sr.Skipped = int(ok.Load()), int(bad.Load()), int(skipped.Load())
	return sr
}

// lockedStep runs step for su, holding su.mu unless it only moves data.
func (r *runner) lockedStep(ctx context.Context, su *simUE, step Step) error {
	if step != StepPing && step != StepTransfer {
		su.mu.Lock()
		defer su.mu.Unlock()
	}
	return r.doStep(ctx, su, step)
}

func (r *runner) doStep(ctx context.Context, su *simUE, step Step) error {
	u := su.u
	switch step {
	case StepRegister:
		return u.Register(ctx)
	case StepReregister:
		return u.Reregister(ctx)
	case StepDeregister:
		err := u.Deregister(ctx, false)
		r.dropSessions(su) // released locally either way
		return err
	case StepSwitchOff:
		err := u.Deregister(ctx, true)
		r.dropSessions(su)
		return err
	case StepSession:
		return r.establish(ctx, su)
	case StepPing:
		return r.ping(ctx, su)
	case StepTransfer:
		return r.transfer(ctx, su)
	case StepRelease:
		return r.release(ctx, su)
	case StepIdle:
		if !u.Connected() && u.Registered() {
			return nil // already in CM-IDLE (e.g. the inactivity timer)
		}
		err := u.Release(ctx)
		if errors.Is(err, ue.ErrNotConnected) && u.Registered() {
			return nil // released by the network meanwhile
		}
		return err
	case StepService:
		st := nas.ServiceSignalling
		if len(liveSessions(su)) > 0 {
			st = nas.ServiceData
		}
		return u.ServiceRequest(ctx, st)
	case StepHandoverXn:
		return r.handover(ctx, su, ue.HandoverXn)
	case StepHandoverN2:
		return r.handover(ctx, su, ue.HandoverN2)
	}
	return errors.New("sim: unknown step " + string(step))
}

func stepProcedure(s Step) string {
	switch s {
	case StepRegister:
		return ue.ProcRegistration
	case StepReregister:
		return ue.ProcReregistration
	case StepDeregister:
		return ue.ProcDeregistration
	case StepSwitchOff:
		return ue.ProcSwitchOff
	case StepSession:
		return ue.ProcPDUSession
	case StepRelease:
		return ue.ProcPDURelease
	case StepPing:
		return ProcPing
	case StepTransfer:
		return ProcTransfer
	case StepIdle:
		return ue.ProcANRelease
	case StepService:
		return ue.ProcServiceRequest
	case StepHandoverXn:
		return ue.ProcHandoverXn
	case StepHandoverN2:
		return ue.ProcHandoverN2
	}
	return string(s)
}

// NewUE builds UE i of the configuration: its USIM (IMSI FirstIMSI+i, the
// configured keys, SQN and SUCI profile) and the UE, attached to no gNB.
// obs and log may be nil.
func (c Config) NewUE(i int, obs ue.Observer, log *slog.Logger) (*ue.UE, error) {
	plmnDigits := len(c.PLMN.MCC) + len(c.PLMN.MNC)
	card, err := usim.New(usim.Subscriber{
		PLMN:             c.PLMN,
		MSIN:             c.imsi(i)[plmnDigits:],
		K:                c.K,
		OPc:              c.OPc,
		AMF:              c.AMF,
		SQN:              c.SQN,
		RoutingIndicator: c.RoutingIndicator,
		Scheme:           c.SUCIScheme,
		HNKeyID:          c.HNKeyID,
		HNPublicKey:      c.HNPublicKey,
	})
	if err != nil {
		return nil, fmt.Errorf("sim: ue %d: %w", i, err)
	}
	var onDereg func(nas.Cause5GMM, bool)
	if f := c.OnDeregistered; f != nil {
		supi := card.SUPI()
		onDereg = func(cause nas.Cause5GMM, rereg bool) { f(supi, cause, rereg) }
	}
	u, err := ue.New(ue.Config{
		USIM:           card,
		ServingPLMN:    c.PLMN,
		RequestedNSSAI: c.Slices,
		EA:             c.EA,
		IA:             c.IA,
		Timeout:        c.Timeout,
		// Idle mode
		InactivityTimeout:       c.InactivityTimeout,
		PeriodicRegistration:    c.PeriodicRegistration,
		OnNetworkDeregistration: onDereg,
		Observer:                obs,
		Logger:                  log,
	})
	if err != nil {
		return nil, fmt.Errorf("sim: ue %d: %w", i, err)
	}
	return u, nil
}
