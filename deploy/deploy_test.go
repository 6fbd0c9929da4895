// Package deploy holds the packaging files (Dockerfile at the repository
// root, compose, systemd); its tests check that they agree with the code.
package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
