package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Doc is the JSON document every `tern bench` writes (benchmarks.md, "Output format").
type Doc struct {
	Bench   string   `json:"bench"`
	Commit  string   `json:"commit"`
	Time    string   `json:"time"`
	Machine Machine  `json:"machine"`
	Params  any      `json:"params"`
	Results []Result `json:"results"`
}

// Machine describes where a benchmark ran.
type Machine struct {
	CPUs   int    `json:"cpus"`
	Kernel string `json:"kernel"`
	GoVer  string `json:"go"`
	Arch   string `json:"arch"`
}

// Result is one figure. Name is the procedure or figure, Variant the
// configuration compared, Unit one of us, ns, ms, pps, bps, bytes, count.
type Result struct {
	Name     string         `json:"name"`
	Variant  string         `json:"variant"`
	Unit     string         `json:"unit"`
	Count    int            `json:"count"`
	Failures int            `json:"failures"`
	Median   float64        `json:"median"`
	P90      float64        `json:"p90"`
	P99      float64        `json:"p99"`
	Max      float64        `json:"max"`
	Samples  []float64      `json:"samples,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
}

// NewDoc starts a document for bench with its parameters, filling in the
// commit and the machine.
func NewDoc(bench string, params any) *Doc {
	return &Doc{
		Bench:   bench,
		Commit:  gitCommit(),
		Time:    time.Now().UTC().Format(time.RFC3339),
		Machine: ThisMachine(),
		Params:  params,
	}
}

// Add appends results.
func (d *Doc) Add(r ...Result) { d.Results = append(d.Results, r...) }

// WriteFile writes the document as indented JSON.
func (d *Doc) WriteFile(path string) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode %s: %w", d.Bench, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// LatencyResult turns a Summary into a Result in microseconds, with raw
// samples when withSamples is set.
func LatencyResult(s Summary, variant string, samples []time.Duration) Result {
	r := Result{
		Name: s.Procedure, Variant: variant, Unit: "us", Count: s.Count, Failures: s.Failures,
		Median: usf(s.Median), P90: usf(s.P90), P99: usf(s.P99), Max: usf(s.Max),
	}
	for _, d := range samples {
		r.Samples = append(r.Samples, usf(d))
	}
	return r
}

func usf(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// ThisMachine reads the CPU count and kernel release.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVer: runtime.Version(), Arch: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// String is a one-line description for table headers.
func (m Machine) String() string {
	return fmt.Sprintf("%d cpus, kernel %s, %s %s", m.CPUs, m.Kernel, m.GoVer, m.Arch)
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return string(bytes.TrimSpace(out))
}
