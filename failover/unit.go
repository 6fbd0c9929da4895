// Package failover runs tern up as a replicated core (resiliency.mode
// local, issue 36, docs/resiliency.md): the process an operator starts
// supervises, and two children of the same binary are the control plane.
//
//	tern up (supervisor)             children (tern unit)
//	  N2 front end ──unit link──▶     active unit: AMF, SMF, ... ──▶ record store (shm)
//	  UPF ◀──────── N4 (PFCP/UDP) ──   standby unit: built, blocked on the
//	                                   active one's pidfd, no CPU
//
// The supervisor holds what must outlive a unit: the gNBs' SCTP
// associations (the front end, resil/n2front) and the user plane (the
// UPF). A unit is the rest of the core (core.WithUnit): each step of the
// AMF and the SMF puts the records it changed into the unit's
// shared-memory record store (resil/shmstore) before the step's messages
// leave (output commit). The standby is a whole core, built and idle; it
// waits on a pidfd of the active unit (resil/procwatch), and when the
// active unit dies it reads that unit's record store, restores the AMF and
// the SMF from it (core.Takeover), binds N4 with the SMF's recorded
// Recovery Time Stamp (the UPF keeps its association and sessions),
// connects to the front end with a higher epoch (the front end refuses the
// old one for good) and resumes each gNB association: the front end
// replays what the dead unit had not acknowledged. The supervisor then
// starts a new standby behind the new active unit.
//
// What a UE sees: nothing, for a process death; its NGAP IDs, 5G-GUTI,
// security context and PDU sessions are the same. What is not covered
// yet: a replica on another node (remote mode) and the death of the
// supervisor itself (it holds the gNB associations and the UPF).
package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/metrics"
	"github.com/tern5g/tern/resil/n2front"
	"github.com/tern5g/tern/resil/procwatch"
	"github.com/tern5g/tern/resil/shmstore"
)

// Role is what a unit starts as.
type Role string

// Roles.
const (
	Active  Role = "active"
	Standby Role = "standby"
)

// UnitConfig is one unit process's part.
type UnitConfig struct {
	Config config.Config // the core's, as the supervisor wrote it for units
	Role   Role
	Epoch  uint64 // above every epoch before it: the front end serves the highest
	// Records is this unit's record store (created).
	Records string
	// RecordStoreSize is its size in bytes.
	RecordStoreSize int
	// Front is the front end's unit socket.
	Front string
	// TakeoverFrom is the record store of the unit a standby replaces;
	// Watch the PID of that unit (0: it is gone already, take over at once).
	TakeoverFrom string
	Watch        int
	// Recording is what the unit does with its records ("": RecordShm).
	Recording Recording
}

// Recording is what a unit does with its records. Only RecordShm
// replicates; the others are references that tern bench failover prices
// replication against, on the same process layout (front end, unit
// process, standby).
type Recording string

// Recordings.
const (
	// RecordShm puts each step's records into the unit's shared-memory
	// record store before the step's messages leave (output commit).
	RecordShm Recording = "shm"
	// RecordDiscard encodes the records and holds the messages as
	// RecordShm does, and drops the records: the price of the record
	// path without the store. A standby restores nothing from it.
	RecordDiscard Recording = "discard"
	// RecordNone records nothing and holds nothing: the NFs run as with
	// resiliency.mode off, behind the front end. A standby cannot take
	// over from it.
	RecordNone Recording = "none"
)

// discardStore is RecordDiscard's store.
type discardStore struct{}

func (discardStore) Put(uint8, []byte, []byte) error { return nil }
func (discardStore) Delete(uint8, []byte) error      { return nil }

// Takeover is what a standby measured when it took over.
type Takeover struct {
	Detected time.Time // the active unit's death seen
	// Reaped is when the supervisor, the dead unit's parent, reaped it
	// (wait4): the reference for Detected. Set by the supervisor.
	Reaped   time.Time
	Restore  time.Duration // from Detected to serving: records read, NFs restored, N2 resumed
	UEs      int           // AMF UE contexts restored
	Sessions int           // SMF UEs restored
	Refused  int           // records that did not decode
}

// RunUnit runs one unit until ctx ends. ready is told the unit's state
// changes (the supervisor reads them from the unit's stdout): "active"
// when it serves, "standby" when it waits, and the Takeover of a standby
// that took over.
func RunUnit(ctx context.Context, uc UnitConfig, log *slog.Logger, ready func(state string, t *Takeover)) error {
	unit := core.Unit{
		Standby: uc.Role == Standby,
		OnRecordFailure: func(err error) {
			log.Error("a record was not stored: a takeover would lose the UE's last step", "err", err)
		},
	}
	switch uc.Recording {
	case "", RecordShm:
		store, err := shmstore.Create(uc.Records, uc.RecordStoreSize, shmstore.Options{Epoch: uc.Epoch})
		if err != nil {
			return fmt.Errorf("failover: unit record store: %w", err)
		}
		defer store.Close()
		unit.Records = store
	case RecordDiscard:
		unit.Records = discardStore{}
	case RecordNone:
		unit.Unrecorded = true
	default:
		return fmt.Errorf("failover: unit recording %q: want %s, %s or %s", uc.Recording, RecordShm, RecordDiscard, RecordNone)
	}
	c, err := core.New(uc.Config, log, core.WithUnit(unit))
	if err != nil {
		return err
	}
	defer c.Close()

	var took *Takeover
	if uc.Role == Standby && uc.Recording == RecordNone {
		// Nothing to take over from: it stands by until it is stopped,
		// a process on the layout as a standby is.
		ready(string(Standby), nil)
		<-ctx.Done()
		return nil
	}
	if uc.Role == Standby {
		ready(string(Standby), nil)
		if took, err = takeOver(ctx, c, uc, log); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while standing by
			}
			return err
		}
	} else {
		if err := c.Start(ctx); err != nil {
			return err
		}
		awaitUPF(ctx, c, log)
	}
	drain := make(chan struct{}, 1)
	op, err := core.StartOperator(uc.Config, operatorHandler(c, drain), log)
	if err != nil {
		log.Warn("running without the operator API", "err", err)
	} else if op != nil {
		defer op.Close()
	}
	link, err := n2front.Dial(uc.Front, uc.Epoch)
	if err != nil {
		c.StopRecording()
		return fmt.Errorf("failover: N2 front end: %w", err)
	}
	defer link.Close()
	if addr := uc.Config.Metrics.Address; addr != "" {
		// The active unit serves the core's metrics; a standby binds the
		// address when it takes over (the dead unit's socket is gone).
		srv, err := serveMetrics(addr, c, link, log)
		if err != nil {
			log.Warn("running without metrics", "addr", addr, "err", err)
		} else {
			defer srv.Close()
		}
	}
	if took != nil {
		// Serving from here: the front end replays to this unit what the
		// dead one had not acknowledged, after the associations it resumes.
		took.Restore = time.Since(took.Detected)
		ready(string(Active), took)
	} else {
		ready(string(Active), nil)
	}
	served := make(chan error, 1)
	go func() { served <- serveN2(c, link, log) }()
	select {
	case <-ctx.Done():
	case <-drain:
	case err := <-served:
		// The front end ended the link: it replaced this unit (a newer
		// epoch) or went away. Whatever this unit does from now on (its
		// connections lost, its teardown) must not reach the store that
		// its successor restores from.
		c.StopRecording()
		if err == nil {
			err = errors.New("the N2 front end ended the link")
		}
		return fmt.Errorf("failover: %w", err)
	}
	return drainUnit(c, link, log)
}

// drainTimeout bounds a drain's wait for the steps in flight.
const drainTimeout = 5 * time.Second

// drainUnit hands the unit's work over to its standby without a loss (a
// planned removal: SIGTERM, or POST /unit/drain on the operator socket):
// no message of the front end is taken any more (what comes stays
// unacknowledged, for the successor), the steps in flight finish (their
// records committed, their messages sent, their messages acknowledged),
// and then the unit stops recording and leaves; its standby sees it go
// and takes over from a store with nothing half done.
func drainUnit(c *core.Core, link *n2front.Link, log *slog.Logger) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	// Nothing more is taken, and what the readers took is queued on the
	// executors once Pause returns; the barrier then lets it all run.
	err := link.Pause(ctx)
	if err == nil {
		err = c.Quiesce(ctx)
	}
	// Nothing after the steps that ran is the successor's: recording
	// stops first (a timer step from now on reaches neither the store nor,
	// once the link is closed, the gNB), then the link closes with the
	// acknowledgements of what ran.
	c.StopRecording()
	link.Close()
	if err != nil {
		log.Error("drained with steps still running: the standby replays their messages", "err", err)
		return nil
	}
	log.Info("drained: the standby takes over", "took", time.Since(start))
	return nil
}

// operatorHandler is the core's operator API with the unit's own
// operation: POST /unit/drain drains this unit (tern drain).
func operatorHandler(c *core.Core, drain chan<- struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", c.OperatorHandler())
	mux.HandleFunc("POST /unit/drain", func(w http.ResponseWriter, r *http.Request) {
		select {
		case drain <- struct{}{}:
		default: // draining already
		}
		w.WriteHeader(http.StatusAccepted)
	})
	return mux
}

// takeOver waits for the active unit's death and restores its state.
func takeOver(ctx context.Context, c *core.Core, uc UnitConfig, log *slog.Logger) (*Takeover, error) {
	t := &Takeover{}
	if uc.Watch > 0 {
		w, err := procwatch.Open(uc.Watch)
		switch {
		case err == nil:
			if t.Detected, err = w.Wait(ctx); err != nil {
				w.Close()
				return nil, err
			}
			w.Close()
		case errors.Is(err, procwatch.ErrNoPidfd):
			return nil, fmt.Errorf("failover: a standby needs pidfd_open (Linux 5.3): %w", err)
		default:
			// The PID names no process: the active unit is gone already.
			log.Info("the active unit is gone already", "pid", uc.Watch, "err", err)
			t.Detected = time.Now()
		}
	} else {
		t.Detected = time.Now()
	}
	log.Warn("the active unit died: taking over", "pid", uc.Watch, "records", uc.TakeoverFrom)
	snap, err := shmstore.Open(uc.TakeoverFrom)
	if err != nil {
		return nil, fmt.Errorf("failover: the active unit's records: %w", err)
	}
	var st core.UnitState
	if err := snap.Each(st.Add); err != nil {
		return nil, fmt.Errorf("failover: the active unit's records: %w", err)
	}
	if n := snap.Stats.Corrupted; n > 0 {
		// A bad entry ends the scan: what came after it is lost too.
		log.Error("the record store is corrupted: the records after the bad entry are lost",
			"skipped_bytes", snap.Stats.Skipped)
		st.Refused += n
	}
	if st.Refused > 0 {
		log.Error("records refused: their UEs are not restored and must register again", "refused", st.Refused)
	}
	if err := c.Takeover(ctx, &st); err != nil {
		return nil, err
	}
	t.UEs, t.Sessions, t.Refused = len(st.AMF), len(st.SMF.UEs), st.Refused
	// The old store stays until the supervisor has seen this unit active
	// (it removes it then): should this unit die before, the next one
	// takes over from it.
	return t, nil
}

// serveN2 hands the front end's associations to the unit's AMF until the
// link ends. Once it has handed over every association the front opened
// at the welcome (the front's marker: Link.Opened), it tells the AMF, which
// loses the restored connections of the gNBs that were not resumed
// (review item 12 of issue 36).
func serveN2(c *core.Core, link *n2front.Link, log *slog.Logger) error {
	go func() {
		select {
		case <-link.Opened():
			// Accept passes the marker on this function's goroutine, after
			// it served every open before it.
			c.ResumeN2Done()
		case <-link.Done():
		}
	}()
	for {
		conn, r, err := link.Accept()
		if err != nil {
			select {
			case <-link.Done():
				return nil
			default:
				return fmt.Errorf("failover: N2 front end: %w", err)
			}
		}
		if !r.Resumed {
			c.ServeN2(conn)
			continue
		}
		if len(r.RANConfigurationUpdates) > 0 {
			// The AMF takes the gNB's configuration from its NG Setup
			// Request only: what the gNB changed since is not seen until
			// it sends another update.
			log.Warn("a resumed gNB's RAN Configuration Updates are not applied", "gnb", conn.RemoteAddr().String(),
				"updates", len(r.RANConfigurationUpdates))
		}
		if err := c.ResumeN2(conn, r.NGSetupRequest); err != nil {
			log.Error("a gNB association could not be resumed: the gNB must set up again", "gnb", conn.RemoteAddr().String(), "err", err)
			conn.Close()
		}
	}
}

// awaitUPF waits, for a while, until one of the SMF's UPFs is associated,
// so that an active unit says it serves when sessions can be set up.
func awaitUPF(ctx context.Context, c *core.Core, log *slog.Logger) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, st := range c.SMF.UPFStates() {
			if st == "up" {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	log.Warn("no UPF associated yet", "upfs", c.SMF.UPFStates())
}

// serveMetrics serves the unit's core metrics on addr; the unit is ready
// while its link to the front end is up and a UPF is associated.
func serveMetrics(addr string, c *core.Core, link *n2front.Link, log *slog.Logger) (*metrics.Server, error) {
	r := metrics.NewRegistry()
	if err := metrics.RegisterCore(r, c); err != nil {
		return nil, err
	}
	return metrics.Serve(addr, r, func() error {
		select {
		case <-link.Done():
			return errors.New("no link to the N2 front end")
		default:
		}
		return metrics.UPFsReady(c.SMF.UPFStates())
	}, log)
}
