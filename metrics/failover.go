package metrics

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tern5g/tern/resil/n2front"
	"github.com/tern5g/tern/upf"
)

// Supervisor is what the supervisor of a replicated core (tern up with
// resiliency.mode local, package failover) tells of itself: the process
// that holds the N2 front end and the UPF while units come and go.
type Supervisor interface {
	FrontStats() n2front.Stats
	TakeoverCount() int
}

// SupervisorStats is one scrape's snapshot of a Supervisor.
type SupervisorStats struct {
	Front     n2front.Stats
	Takeovers int
}

var supervisorStats = []stat[SupervisorStats]{
	counter("n2front", "uplink_messages_total", "Messages received from gNBs.", func(s *SupervisorStats) float64 { return u(s.Front.Uplink) }),
	counter("n2front", "downlink_messages_total", "Messages sent to gNBs.", func(s *SupervisorStats) float64 { return u(s.Front.Downlink) }),
	gauge("n2front", "logged_messages", "Uplink messages in the replay log: not yet acknowledged by the active unit.", func(s *SupervisorStats) float64 { return u(s.Front.Logged) }),
	gauge("n2front", "logged_bytes", "Bytes of the messages in the replay log.", func(s *SupervisorStats) float64 { return u(s.Front.LoggedBytes) }),
	counter("n2front", "acknowledged_messages_total", "Messages acknowledged out of the replay log.", func(s *SupervisorStats) float64 { return u(s.Front.Acked) }),
	counter("n2front", "replayed_messages_total", "Messages sent again, to a unit after the one they were sent to.", func(s *SupervisorStats) float64 { return u(s.Front.Replayed) }),
	counter("n2front", "log_full_drops_total", "Uplink messages refused: the replay log was full (a gNB or UE must send them again).", func(s *SupervisorStats) float64 { return u(s.Front.LogFull) }),
	counter("n2front", "dropped_with_association_total", "Logged messages dropped because their association ended before a unit acknowledged them.", func(s *SupervisorStats) float64 { return u(s.Front.DroppedWithAssociation) }),
	counter("n2front", "units_refused_total", "Unit links refused: an epoch not above the highest seen (fenced), a bad hello, another user.", func(s *SupervisorStats) float64 { return u(s.Front.UnitsRefused) }),
	counter("n2front", "fenced_frames_total", "Frames from a replaced unit, ignored.", func(s *SupervisorStats) float64 { return u(s.Front.FencedFrames) }),
	counter("n2front", "malformed_frames_total", "Malformed frames from units (each ended its link).", func(s *SupervisorStats) float64 { return u(s.Front.MalformedFrames) }),
	counter("n2front", "send_errors_total", "Downlink messages a gNB's association refused.", func(s *SupervisorStats) float64 { return u(s.Front.SendErrors) }),
	gauge("n2front", "associations", "gNB associations held.", func(s *SupervisorStats) float64 { return u(s.Front.Associations) }),
	gauge("n2front", "unit_active", "1 while a unit is connected to the front end, 0 during a takeover.", func(s *SupervisorStats) float64 {
		if s.Front.UnitActive {
			return 1
		}
		return 0
	}),
	gauge("n2front", "epoch", "The highest unit epoch the front end has seen.", func(s *SupervisorStats) float64 { return u(s.Front.Epoch) }),
	counter("failover", "takeovers_total", "Takeovers by a standby unit (a dead or drained active unit replaced).", func(s *SupervisorStats) float64 { return u(s.Takeovers) }),
}

type supervisorCollector struct{ s Supervisor }

func (c supervisorCollector) Describe(ch chan<- *prometheus.Desc) { describe(ch, supervisorStats) }

func (c supervisorCollector) Collect(ch chan<- prometheus.Metric) {
	st := SupervisorStats{Front: c.s.FrontStats(), Takeovers: c.s.TakeoverCount()}
	collect(ch, supervisorStats, &st)
}

// ServeSupervisor serves the metrics of a replicated core's supervisor on
// addr: its UPF's (as tern nf upf has them) and its N2 front end's. It is
// ready while a unit is connected to the front end and the UPF serves
// PFCP.
func ServeSupervisor(addr string, s Supervisor, up *upf.UPF, log *slog.Logger) (*Server, error) {
	r := NewRegistry()
	if err := RegisterUPF(r, up); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if err := r.Register(supervisorCollector{s}); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	upfReady := UPFReady(up)
	return Serve(addr, r, func() error {
		if !s.FrontStats().UnitActive {
			return errors.New("no unit connected to the N2 front end (a takeover in progress?)")
		}
		return upfReady()
	}, log)
}
