// Package deploy holds the packaging files (Dockerfile at the repository
// root, compose, systemd); its tests check that they agree with the code.
package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tern5g/tern/config"
)

// TestConfigsLoad: every configuration shipped here is valid for this
// tern (a renamed or removed key fails it), and the compose file's core
// listens on the address its simulator dials.
func TestConfigsLoad(t *testing.T) {
	tmpl, err := os.ReadFile("docker/tern.yaml.in")
	if err != nil {
		t.Fatal(err)
	}
	docker, err := config.Parse([]byte(strings.ReplaceAll(string(tmpl), "@N3_IP@", "172.17.0.2")))
	if err != nil {
		t.Fatalf("docker/tern.yaml.in: %v", err)
	}
	if docker.UPF.N3Addr != "172.17.0.2:2152" || docker.SMF.UPFs[0].N3 != "172.17.0.2" || docker.Store.Path != "/var/lib/tern/subscribers.db" {
		t.Errorf("docker/tern.yaml.in: n3 %s / %s, store %s", docker.UPF.N3Addr, docker.SMF.UPFs[0].N3, docker.Store.Path)
	}
	if _, err := config.Load("systemd/tern.yaml"); err != nil {
		t.Error(err)
	}
	compose, err := config.Load("compose/tern.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Command  []string `yaml:"command"`
			Networks map[string]struct {
				IPv4 string `yaml:"ipv4_address"`
			} `yaml:"networks"`
		} `yaml:"services"`
	}
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	coreIP := c.Services["core"].Networks["ran"].IPv4
	if coreIP == "" || compose.AMF.N2Address != coreIP+":38412" || compose.UPF.N3Addr != coreIP+":2152" {
		t.Errorf("compose: core at %q, its config has N2 %s, N3 %s", coreIP, compose.AMF.N2Address, compose.UPF.N3Addr)
	}
	sim := strings.Join(c.Services["sim"].Command, " ")
	if !strings.Contains(sim, "--amf "+coreIP+":38412") || !strings.Contains(sim, "--n3 "+c.Services["sim"].Networks["ran"].IPv4+":2152") {
		t.Errorf("compose: the simulator's flags %q do not match the addresses", sim)
	}
}

// TestSystemdUnit: the unit runs tern up with /etc/tern/tern.yaml and a
// state directory for the store.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("systemd/tern.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, want := range []string{"ExecStart=/usr/local/bin/tern up --config /etc/tern/tern.yaml", "StateDirectory=tern", "[Install]"} {
		if !strings.Contains(unit, want) {
			t.Errorf("tern.service lacks %q", want)
		}
	}
}

// TestDockerBuild builds the image and runs `tern version` and the demo in
// it. It needs a Docker daemon and minutes, so it skips without one or with
// -short.
func TestDockerBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("docker build takes minutes")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker not installed")
	}
	if out, err := exec.Command(docker, "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon (docker info: %v): %s", err, lastLine(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, _ := filepath.Abs("..")
	if out, err := exec.CommandContext(ctx, docker, "build", "--build-arg", "COMMIT=test", "-t", "tern:test", root).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, docker, "run", "--rm", "tern:test", "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "commit test") {
		t.Fatalf("tern version in the image: %v: %s", err, out)
	}
	// The image runs the demo: a core and a simulated RAN in the container
	// (NET_ADMIN and the TUN device for the UPF's N6).
	out, err = exec.CommandContext(ctx, docker, "run", "--rm", "--cap-add", "NET_ADMIN", "--device", "/dev/net/tun",
		"tern:test", "demo", "--ues", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("tern demo in the image: %v: %s", err, out)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// TestDockerRunLinesAgree: the README, deploy/README.md and the
// Dockerfile give the same docker run line for the core, and it has what
// the core needs: NET_ADMIN and /dev/net/tun for the UPF's N6 devices, N2
// (SCTP and SCTP over UDP) and N3 published, TERN_N3_IP (the host's
// address the gNBs reach), the store's volume.
func TestDockerRunLinesAgree(t *testing.T) {
	var lines []string
	for _, f := range []string{"../README.md", "README.md", "../Dockerfile"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		runs := coreDockerRuns(string(b))
		if len(runs) == 0 {
			t.Errorf("%s: no docker run line for the core", f)
		}
		for _, r := range runs {
			for _, want := range []string{"--cap-add NET_ADMIN", "--device /dev/net/tun", "-e TERN_N3_IP=",
				"-p 38412:38412/sctp", "-p 9899:9899/udp", "-p 2152:2152/udp", "-v tern-data:/var/lib/tern"} {
				if !strings.Contains(r, want) {
					t.Errorf("%s: %q lacks %s", f, r, want)
				}
			}
			lines = append(lines, r)
		}
	}
	for _, l := range lines[1:] {
		if l != lines[0] {
			t.Errorf("docker run lines differ:\n%s\n%s", lines[0], l)
		}
	}
}

// coreDockerRuns returns the docker run commands in text that run the
// image's default command (tern up): continuation lines joined, a
// Dockerfile's comment marks and extra spaces dropped.
func coreDockerRuns(text string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#"))
		if cur.Len() == 0 && !strings.HasPrefix(l, "docker run ") {
			continue
		}
		cont := strings.HasSuffix(l, `\`)
		cur.WriteString(strings.TrimSuffix(l, `\`) + " ")
		if cont {
			continue
		}
		cmd := strings.Join(strings.Fields(cur.String()), " ")
		cur.Reset()
		if strings.HasSuffix(cmd, " tern") || strings.HasSuffix(cmd, " tern up") {
			out = append(out, cmd)
		}
	}
	return out
}

// TestComposeSimBuilds: the simulator service builds the image it runs,
// the core's (compose pulls what it does not build, and there is no tern
// image to pull).
func TestComposeSimBuilds(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image string `yaml:"image"`
			Build any    `yaml:"build"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	core, sim := c.Services["core"], c.Services["sim"]
	if sim.Build == nil {
		t.Fatal("compose.yaml: the sim service has no build")
	}
	if sim.Image != core.Image || !reflect.DeepEqual(sim.Build, core.Build) {
		t.Errorf("compose.yaml: sim builds %v as %q, the core %v as %q", sim.Build, sim.Image, core.Build, core.Image)
	}
}

// TestMakeToolsWaitsForDpkgLock: make tools passes apt-get the dpkg lock
// timeout, so that it waits for an apt run already going on a fresh
// machine (unattended-upgrades at boot) instead of giving up. It runs the
// target with a PATH on which nothing the tests use is installed and
// apt-get, sudo and debconf-set-selections are stand-ins that record how
// they were called.
func TestMakeToolsWaitsForDpkgLock(t *testing.T) {
	makeCmd, err := exec.LookPath("make")
	if err != nil {
		t.Skip("needs make")
	}
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	// Shell built-ins only: nothing else is on PATH.
	record := "#!/bin/sh\necho \"${0##*/} $*\" >> " + calls + "\n"
	for name, script := range map[string]string{
		"apt-get":                record,
		"debconf-set-selections": record + "while read -r line; do :; done\n",
		"sudo":                   "#!/bin/sh\nexec \"$@\"\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// What the recipe runs besides them, from this machine.
	for _, name := range []string{"id", "env", "ls"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("needs %s", name)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(makeCmd, "-s", "-C", "..", "tools")
	cmd.Env = append(os.Environ(), "PATH="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make tools: %v\n%s", err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("make tools called no apt-get: %v", err)
	}
	var apt int
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "apt-get ") {
			continue
		}
		apt++
		if !strings.Contains(line, "-o DPkg::Lock::Timeout=120") {
			t.Errorf("apt-get called without the dpkg lock timeout: %s", line)
		}
	}
	if apt != 2 {
		t.Errorf("apt-get called %d times, want 2 (update, install):\n%s", apt, b)
	}
}
