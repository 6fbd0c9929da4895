package xdp

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
)

const (
	steerBuckets = 256 // bpf/upf.c: STEER_BUCKETS
	// rebalanceInterval is how often Load's goroutine rebalances.
	rebalanceInterval = time.Second
	// rebalanceMargin: the busiest CPU is rebalanced when its load
	// exceeds the average by this fraction.
	rebalanceMargin = 0.25
	// rebalanceMinPackets: a window with fewer packets in all is noise,
	// and moves nothing.
	rebalanceMinPackets = 1000
	// maxMovesPerRebalance bounds the buckets one Rebalance moves (each
	// may reorder a few packets).
	maxMovesPerRebalance = 16
)

// SteerMove is a bucket Rebalance moved from one CPU to another.
type SteerMove struct {
	Bucket   int
	From, To int // CPUs
}

// steering is the state of the indirection table.
type steering struct {
	cpus []int // slot -> CPU

	mu          sync.Mutex
	owner       [steerBuckets]int    // bucket -> slot
	last        [steerBuckets]uint64 // the bucket counters at the last Rebalance
	bucketLoads []uint64             // the last Rebalance's window
	cpuLoads    []uint64             // by slot
	moves       uint64

	stop, done chan struct{}
}

// CPUMapQueue is the frames each CPU's cpumap queue holds (the bench's
// bare-xdp-cpu reference takes the same).
const CPUMapQueue = 2048

// CPUMapVal is struct bpf_cpumap_val: a cpumap entry's queue size and the
// program its CPU runs on each frame.
type CPUMapVal struct {
	Qsize  uint32
	ProgFD int32
}

// loadObjects creates the maps and loads the programs: the steering
// programs and upf_cpu only with steering, so that without it nothing
// changes.
func (f *FastPath) loadObjects(spec *ebpf.CollectionSpec) error {
	switch {
	case len(f.cfg.SteerCPUs) > 0:
		online, err := onlineCPUs()
		if err != nil {
			return err
		}
		for _, c := range f.cfg.SteerCPUs {
			if !slices.Contains(online, c) {
				return fmt.Errorf("xdp: CPU %d to steer to is not online (online: %v)", c, online)
			}
		}
		f.steer = &steering{cpus: slices.Compact(slices.Sorted(slices.Values(f.cfg.SteerCPUs)))}
	case f.cfg.CPUs > 1:
		online, err := onlineCPUs()
		if err != nil {
			return err
		}
		n := min(f.cfg.CPUs, len(online))
		if n < f.cfg.CPUs {
			f.log.Warn("xdp: fewer CPUs online than configured to steer over", "cpus", f.cfg.CPUs, "online", len(online))
		}
		if n > 1 {
			f.steer = &steering{cpus: online[:n]}
		}
	}
	spec.Maps["cpus"].MaxEntries = uint32(f.ncpu)
	if f.steer != nil {
		return spec.LoadAndAssign(&f.objs, nil)
	}
	var core struct {
		upfMaps
		UpfN3         *ebpf.Program `ebpf:"upf_n3"`
		UpfN6         *ebpf.Program `ebpf:"upf_n6"`
		PassAll       *ebpf.Program `ebpf:"pass_all"`
		UpfClockStart *ebpf.Program `ebpf:"upf_clock_start"`
	}
	if err := spec.LoadAndAssign(&core, nil); err != nil {
		return err
	}
	f.objs.upfMaps = core.upfMaps
	f.objs.UpfN3, f.objs.UpfN6, f.objs.PassAll = core.UpfN3, core.UpfN6, core.PassAll
	f.objs.UpfClockStart = core.UpfClockStart
	return nil
}

// configureSteering gives every CPU its cpumap entry (queue, upf_cpu) and
// spreads the buckets over them round robin.
func (f *FastPath) configureSteering() error {
	s := f.steer
	for _, cpu := range s.cpus {
		v := CPUMapVal{Qsize: CPUMapQueue, ProgFD: int32(f.objs.UpfCpu.FD())}
		if err := f.objs.Cpus.Update(uint32(cpu), &v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("xdp: cpumap entry for CPU %d: %w", cpu, err)
		}
	}
	for b := range steerBuckets {
		s.owner[b] = b % len(s.cpus)
		if err := f.objs.SteerTable.Update(uint32(b), uint32(s.cpus[s.owner[b]]), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("xdp: steering table: %w", err)
		}
	}
	return nil
}

// steerBucket is the bucket of a session key (a TEID, or a UE address in
// host order), as steer_to in bpf/upf.c computes it.
func steerBucket(k uint32) int { return int(k * 2654435761 >> 24) }

// SteerCPUs returns the CPUs the programs steer over; nil without
// steering.
func (f *FastPath) SteerCPUs() []int {
	if f.steer == nil {
		return nil
	}
	return slices.Clone(f.steer.cpus)
}

// Rebalance reads the packets each bucket carried since the last call
// and, if the busiest CPU carried more than rebalanceMargin over the
// average, moves buckets from it to the least busy CPU (planMoves). It
// returns the moves; nothing without steering. Load calls it every
// rebalanceInterval. Moving a bucket may reorder the packets of its flows
// that are in flight at that moment (see Steering).
func (f *FastPath) Rebalance() []SteerMove {
	s := f.steer
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	loads := make([]uint64, steerBuckets)
	vals := make([]uint64, f.ncpu)
	for b := range steerBuckets {
		if err := f.objs.SteerLoad.Lookup(uint32(b), &vals); err != nil {
			f.log.Warn("xdp: reading the steering counters", "err", err)
			return nil
		}
		var sum uint64
		for _, v := range vals {
			sum += v
		}
		loads[b] = sum - s.last[b]
		s.last[b] = sum
	}
	s.bucketLoads = loads
	s.cpuLoads = make([]uint64, len(s.cpus))
	for b, l := range loads {
		s.cpuLoads[s.owner[b]] += l
	}
	var out []SteerMove
	for _, m := range planMoves(loads, s.owner[:], len(s.cpus)) {
		if err := f.objs.SteerTable.Update(uint32(m.Bucket), uint32(s.cpus[m.To]), ebpf.UpdateExist); err != nil {
			f.log.Warn("xdp: steering table", "err", err)
			break
		}
		s.owner[m.Bucket] = m.To
		s.moves++
		out = append(out, SteerMove{Bucket: m.Bucket, From: s.cpus[m.From], To: s.cpus[m.To]})
	}
	if len(out) > 0 {
		f.log.Debug("xdp: rebalanced", "moves", len(out), "cpu_loads", s.cpuLoads)
	}
	return out
}

// planMoves is Rebalance's decision: loads are the packets of each bucket
// in the window, owner the slot (0..n-1) each bucket is on. While the
// busiest slot carries more than rebalanceMargin over the average, it
// moves the busiest bucket of the busiest slot that leaves the least busy
// slot no busier than the busiest (a move that would just make the target
// the new busiest, a single elephant bucket say, is not made), at most
// maxMovesPerRebalance of them. From and To of the moves are slots.
func planMoves(loads []uint64, owner []int, n int) []SteerMove {
	if n < 2 {
		return nil
	}
	cpu := make([]uint64, n)
	var total uint64
	for b, l := range loads {
		cpu[owner[b]] += l
		total += l
	}
	if total < rebalanceMinPackets {
		return nil
	}
	avg := float64(total) / float64(n)
	own := slices.Clone(owner)
	var moves []SteerMove
	for len(moves) < maxMovesPerRebalance {
		hot, cool := 0, 0
		for i, l := range cpu {
			if l > cpu[hot] {
				hot = i
			}
			if l < cpu[cool] {
				cool = i
			}
		}
		if float64(cpu[hot]) <= avg*(1+rebalanceMargin) {
			break
		}
		best := -1
		for b, l := range loads {
			if own[b] != hot || l == 0 || cpu[cool]+l > cpu[hot]-l {
				continue
			}
			if best < 0 || l > loads[best] {
				best = b
			}
		}
		if best < 0 {
			break
		}
		own[best] = cool
		cpu[hot] -= loads[best]
		cpu[cool] += loads[best]
		moves = append(moves, SteerMove{Bucket: best, From: hot, To: cool})
	}
	return moves
}

// startRebalancing runs Rebalance every interval until stopRebalancing.
func (f *FastPath) startRebalancing(interval time.Duration) {
	s := f.steer
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				f.Rebalance()
			}
		}
	}()
}

func (f *FastPath) stopRebalancing() {
	if s := f.steer; s != nil && s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
}

// steerStats fills the steering part of st.
func (f *FastPath) steerStats(st *Stats) {
	s := f.steer
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.SteerCPUs = slices.Clone(s.cpus)
	st.SteerMoves = s.moves
	st.SteerCPULoads = slices.Clone(s.cpuLoads)
	st.SteerBucketLoads = slices.Clone(s.bucketLoads)
}

// onlineCPUs lists the CPUs online (/sys/devices/system/cpu/online, a
// list like "0-3,6").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("xdp: CPUs online: %w", err)
	}
	cpus, err := ParseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("xdp: CPUs online: %w", err)
	}
	return cpus, nil
}

// ParseCPUList reads a CPU list as the kernel writes one: "0-3,8,10-11".
func ParseCPUList(s string) ([]int, error) {
	var out []int
	for r := range strings.SplitSeq(s, ",") {
		if r == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q", s)
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil || z < a {
				return nil, fmt.Errorf("CPU list %q", s)
			}
		}
		for c := a; c <= z; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
