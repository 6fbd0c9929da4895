package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecorderSummaries(t *testing.T) {
	r := NewRecorder()
	var wg sync.WaitGroup
	for i := 1; i <= 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r.Observe("registration", time.Duration(i)*time.Microsecond)
		}(i)
	}
	wg.Wait()
	r.Fail("registration")
	r.Observe("deregistration", 5*time.Microsecond)
	sums := r.Summaries()
	if len(sums) != 2 || sums[0].Procedure != "deregistration" {
		t.Fatalf("got %+v", sums)
	}
	reg := sums[1]
	if reg.Count != 100 || reg.Failures != 1 || reg.Median != 50*time.Microsecond ||
		reg.P90 != 90*time.Microsecond || reg.P99 != 99*time.Microsecond || reg.Max != 100*time.Microsecond {
		t.Fatalf("got %+v", reg)
	}
	var sb strings.Builder
	WriteTable(&sb, "t", sums)
	if !strings.Contains(sb.String(), "FAILURES: 1") || !strings.Contains(sb.String(), "registration") {
		t.Fatalf("table:\n%s", sb.String())
	}
}

func TestDocJSON(t *testing.T) {
	d := NewDoc("register", map[string]int{"ues": 1})
	d.Add(LatencyResult(Summary{Procedure: "registration", Count: 1, Median: 412 * time.Microsecond}, "unit", nil))
	p := filepath.Join(t.TempDir(), "r.json")
	if err := d.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	var got struct {
		Bench   string
		Machine struct{ CPUs int }
		Results []struct {
			Name, Variant, Unit string
			Median              float64
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Bench != "register" || got.Machine.CPUs < 1 || got.Results[0].Median != 412 || got.Results[0].Unit != "us" {
		t.Fatalf("got %+v", got)
	}
}

func TestResidentBytes(t *testing.T) {
	self := ResidentBytes(0)
	if self == 0 {
		t.Skip("no /proc/self/status")
	}
	if byPID := ResidentBytes(os.Getpid()); byPID == 0 {
		t.Fatal("own pid gave no VmRSS")
	}
	if ResidentBytes(-1) != 0 {
		t.Fatal("a bogus pid gave a size")
	}
}

func TestDurationAndCounts(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                         "0",
		185700 * time.Nanosecond:  "185.7µs",
		131370 * time.Microsecond: "131.4ms",
		2050 * time.Millisecond:   "2.05s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%d) = %q, want %q", d, got, want)
		}
	}
	if got := Counts(map[string]uint64{}); got != "none" {
		t.Errorf("Counts(empty) = %q", got)
	}
	if got := Counts(map[string]uint64{"no-n6": 2, "buffer-expired": 3, "zero": 0}); got != "buffer-expired 3, no-n6 2" {
		t.Errorf("Counts = %q", got)
	}
	var sb strings.Builder
	WriteTable(&sb, "", []Summary{{Procedure: "transfer", Count: 1, Median: 131370 * time.Microsecond,
		P90: 131370 * time.Microsecond, P99: 131370 * time.Microsecond, Max: 131370 * time.Microsecond}})
	if !strings.Contains(sb.String(), "131.4ms") || strings.Contains(sb.String(), "131370") {
		t.Errorf("table:\n%s", sb.String())
	}
}
