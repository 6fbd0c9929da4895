package upf

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Per-program cost. With Config.Profile, each variant's last round is
// followed, for every size and direction, by one more flat-out run with
// the kernel's BPF run-time statistics on (BPF_ENABLE_STATS, held for that
// run only), which give each XDP program of the data path its average
// nanoseconds per run: where a packet's time goes, program by program
// (the UPF's against the bare forwarder's on the same CPU). The statistics
// cost two clock reads per run, so these runs count in no throughput row.

// profiled are the programs whose cost is reported: upf/xdp's, the
// bare-xdp references' (bpf/bench.c), and the sink's, which shares the
// CPU with them on two cores (and costs about the same whether it reads a
// G-PDU, tern's downlink and the references' uplink, or a plain packet).
var profiled = []string{"upf_n3", "upf_n6", "upf_n3_steer", "upf_n6_steer", "upf_cpu",
	"xdp_fwd", "xdp_fwd_lookup", "xdp_fwd_steer", "xdp_fwd_cpu", "xdp_sink"}

// ProgCost is what one program ran during a profiled run.
type ProgCost struct {
	Runs    uint64
	Runtime time.Duration
}

// NsPerRun is the average time of one run.
func (c ProgCost) NsPerRun() float64 {
	if c.Runs == 0 {
		return 0
	}
	return float64(c.Runtime.Nanoseconds()) / float64(c.Runs)
}

// programCosts sums the statistics of this process's programs named in
// profiled, by name. Only its own: programs of the same names loaded by
// other processes (another UPF, tests running side by side) run on their
// own traffic.
func programCosts() (map[string]ProgCost, error) {
	ids, err := ownPrograms()
	if err != nil {
		return nil, err
	}
	out := map[string]ProgCost{}
	for _, id := range ids {
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone meanwhile
		}
		info, ierr := p.Info()
		st, serr := p.Stats()
		p.Close()
		if ierr != nil || serr != nil || !slices.Contains(profiled, info.Name) {
			continue
		}
		c := out[info.Name]
		c.Runs += st.RunCount
		c.Runtime += st.Runtime
		out[info.Name] = c
	}
	return out, nil
}

// ownPrograms are the IDs of the BPF programs this process holds a file
// descriptor of (the kernel names them in /proc/self/fdinfo), each once.
func ownPrograms() ([]ebpf.ProgramID, error) {
	fds, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		return nil, fmt.Errorf("bench upf: list BPF programs: %w", err)
	}
	var ids []ebpf.ProgramID
	for _, fd := range fds {
		b, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue // closed meanwhile
		}
		for line := range strings.Lines(string(b)) {
			v, ok := strings.CutPrefix(line, "prog_id:")
			if !ok {
				continue
			}
			if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil && !slices.Contains(ids, ebpf.ProgramID(id)) {
				ids = append(ids, ebpf.ProgramID(id))
			}
		}
	}
	return ids, nil
}

// profile runs every size and direction once more on st with the
// statistics on, and records each program's share.
func (b *bench) profile(ctx context.Context, st *stage) error {
	for _, size := range b.cfg.Sizes {
		for _, dir := range b.cfg.Directions {
			g, err := b.generator(st.variant, dir, size, st.ss)
			if err != nil {
				return err
			}
			stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
			if err != nil {
				return fmt.Errorf("bench upf: BPF run-time statistics: %w", err)
			}
			before, err := programCosts()
			if err == nil {
				_, err = b.measure(ctx, g, b.cfg.Duration, 0)
			}
			var after map[string]ProgCost
			if err == nil {
				after, err = programCosts()
			}
			stats.Close()
			if err != nil {
				return err
			}
			k := Key{Variant: st.variant, Dir: dir, Size: size, Sessions: len(st.ss), Workers: st.workers}
			deltas := map[string]ProgCost{}
			var most uint64
			for _, name := range profiled {
				d := ProgCost{Runs: after[name].Runs - before[name].Runs, Runtime: after[name].Runtime - before[name].Runtime}
				deltas[name], most = d, max(most, d.Runs)
			}
			costs := map[string]ProgCost{}
			var line []string
			for _, name := range profiled {
				// A program that saw a few stray frames (ARP, or the
				// other direction's interface) says nothing of the path.
				d := deltas[name]
				if d.Runs == 0 || d.Runs < most/100 {
					continue
				}
				costs[name] = d
				line = append(line, fmt.Sprintf("%s %.0f ns", name, d.NsPerRun()))
			}
			if len(costs) == 0 {
				continue // the generator's stage: no program of the path
			}
			b.rep.Profile[k] = costs
			fmt.Fprintf(b.cfg.Out, "  profile %-12s %-8s %5d B  per run: %s\n", st.variant, dir, size, strings.Join(line, ", "))
		}
	}
	return nil
}
