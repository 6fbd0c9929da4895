package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/lab"
)

// TestLabServersLineWithoutIperf3: where iperf3 is not installed, lab
// serve and lab up say so instead of announcing iperf3 servers that do
// not run.
func TestLabServersLineWithoutIperf3(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	line := dnServers(lab.IperfInstalled())
	if strings.Contains(line, "iperf3 :") || !strings.Contains(line, "iperf3 is not installed") || !strings.Contains(line, "HTTP :") {
		t.Errorf("without iperf3: %q", line)
	}
	if err := os.WriteFile(filepath.Join(dir, "iperf3"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if line := dnServers(lab.IperfInstalled()); !strings.Contains(line, "iperf3 :5201") {
		t.Errorf("with iperf3: %q", line)
	}
}
