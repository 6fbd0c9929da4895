package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/tern5g/tern/failover"
	"github.com/tern5g/tern/resil/procwatch"
)

// unitEnv makes the test binary a unit process (the Spawn below), as
// package failover's test does: tern unit without building tern.
const unitEnv = "TERN_BENCH_FAILOVER_TEST_UNIT"

func TestMain(m *testing.M) {
	if os.Getenv(unitEnv) == "1" {
		os.Exit(runTestUnit(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func runTestUnit(args []string) int {
	if len(args) == 0 || args[0] != "unit" {
		fmt.Fprintln(os.Stderr, "unit process: want the unit command line")
		return 2
	}
	uc, err := failover.ParseUnitArgs(args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})).With("unit", uc.Epoch)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := failover.RunUnit(ctx, uc, log, func(state string, t *failover.Takeover) {
		fmt.Println(failover.UnitLine(state, t))
	}); err != nil {
		fmt.Fprintln(os.Stderr, "unit:", err)
		return 1
	}
	return 0
}

func testSpawn(args []string) (*exec.Cmd, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), unitEnv+"=1")
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// needLocalMode skips where a replicated core cannot run: a standby
// watches the active unit through a pidfd, and the record stores live in
// /dev/shm.
func needLocalMode(t *testing.T) {
	t.Helper()
	w, err := procwatch.Open(os.Getpid())
	if errors.Is(err, procwatch.ErrNoPidfd) {
		t.Skip("no pidfd_open (Linux 5.3): a standby cannot watch the active unit")
	}
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm: local mode keeps its record stores there")
	}
}

// TestIdleDrill runs drill (a) with a few dozen UEs: on the replicated
// core no UE registers again and no procedure fails; in the reattach
// baseline of the same run every UE registers again.
func TestIdleDrill(t *testing.T) {
	needLocalMode(t)
	const ues = 40
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, cost, err := Run(ctx, Config{UEs: ues, GNBs: 2, Concurrency: 8, Drills: []string{DrillIdle}, Reattach: true,
		Spawn: testSpawn, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if cost != nil || len(rs) != 2 || rs[0].Variant != VariantLocal || rs[1].Variant != VariantReattach {
		t.Fatalf("results %+v, cost %+v; want idle local then reattach", rs, cost)
	}
	local, reattach := rs[0], rs[1]
	if local.Reregistered != 0 || local.Failed != 0 || len(local.Failures) != 0 {
		t.Errorf("local: %d re-registered, %d failed (%s); want none", local.Reregistered, local.Failed, local.FailureList())
	}
	if local.Restored != ues || local.Detect <= 0 || local.Reaped <= 0 || local.Takeover <= 0 || local.Served <= 0 {
		t.Errorf("local: restored %d UEs (want %d), detect %v, wait4 %v, takeover %v, served %v",
			local.Restored, ues, local.Detect, local.Reaped, local.Takeover, local.Served)
	}
	if reattach.Reregistered != ues || reattach.Takeover <= 0 || reattach.Served <= 0 {
		t.Errorf("reattach: %d re-registered (want %d), restart %v, served %v", reattach.Reregistered, ues, reattach.Takeover, reattach.Served)
	}
	// What the UEs see of the baseline: each service request rejected.
	if reattach.Failures["service-request"] != ues {
		t.Errorf("reattach: failures %s; want %d service requests", reattach.FailureList(), ues)
	}

	rows := Results(rs, nil)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, row := range rows {
		if row.Name != DrillIdle || row.Variant != rs[i].Variant || row.Unit != "ms" {
			t.Errorf("row %d: %s/%s/%s", i, row.Name, row.Variant, row.Unit)
		}
		for _, f := range []string{"takeover", "reregistered", "failed", "failures", "served"} {
			if _, ok := row.Extra[f]; !ok {
				t.Errorf("row %d has no %s", i, f)
			}
		}
	}
	if _, ok := rows[0].Extra["detect"]; !ok {
		t.Error("local row has no detect")
	}
	if _, ok := rows[1].Extra["detect"]; ok {
		t.Error("reattach row has a detect: a restarted core detects nothing")
	}
	if got := rows[1].Extra["reregistered"]; got != ues {
		t.Errorf("reattach row: reregistered %v", got)
	}
}

// TestReplicationCost runs the replication cost with a few UEs: a row per
// variant, the units' ones on local mode's process layout, no failures,
// and the ratios to off (the unit recording nothing).
func TestReplicationCost(t *testing.T) {
	needLocalMode(t)
	const ues = 12
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, cost, err := Run(ctx, Config{UEs: ues, GNBs: 2, Drills: []string{Cost}, Spawn: testSpawn, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 0 || cost == nil {
		t.Fatalf("results %+v, cost %+v", rs, cost)
	}
	rows := Results(nil, cost)
	if len(rows) != len(CostVariants) {
		t.Fatalf("%d rows, want one per variant %v", len(rows), CostVariants)
	}
	for i, row := range rows {
		v := CostVariants[i]
		if row.Name != Cost || row.Variant != v || row.Count != ues {
			t.Errorf("row %d: %s/%s, %d UEs", i, row.Name, row.Variant, row.Count)
		}
		if row.Failures != 0 {
			t.Errorf("%s: %d procedures failed", v, row.Failures)
		}
		if cost.Registration[v] <= 0 || cost.PDUSession[v] <= 0 {
			t.Errorf("%s: registration %v, pdu-session %v", v, cost.Registration[v], cost.PDUSession[v])
		}
		for _, f := range []string{"registration", "pdu-session"} {
			if r, ok := row.Extra[f].(float64); !ok || r <= 0 || (v == VariantOff && r != 1) {
				t.Errorf("%s: %s ratio %v", v, f, row.Extra[f])
			}
		}
	}
}
