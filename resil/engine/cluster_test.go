package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tern5g/tern/internal/freeport"
)

// memberEnv, when set, makes the test binary a cluster member: it runs the
// embedded server of the ServerConfig the variable holds (JSON), says
// "ready" on stdout, and serves until killed.
const memberEnv = "TERN_ENGINE_TEST_MEMBER"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(memberEnv); cfg != "" {
		os.Exit(runMember(cfg))
	}
	os.Exit(m.Run())
}

func runMember(js string) int {
	var cfg ServerConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 2
	}
	cfg.ReadyTimeout = 30 * time.Second
	cfg.Log = os.Getenv("TERN_ENGINE_TEST_LOG") != "" // the members' logs, to debug
	s, err := NewServer(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 1
	}
	fmt.Println("ready")
	s.WaitForShutdown()
	return 0
}

type member struct {
	name string
	url  string
	cmd  *exec.Cmd
}

// startCluster starts n members as separate processes, each with its own
// store and loopback ports, killed at cleanup.
func startCluster(t *testing.T, n int) []*member {
	t.Helper()
	var clientPorts, routePorts []int
	for range n {
		cp, err := freeport.TCP()
		if err != nil {
			t.Fatal(err)
		}
		rp, err := freeport.TCP()
		if err != nil {
			t.Fatal(err)
		}
		clientPorts, routePorts = append(clientPorts, cp), append(routePorts, rp)
	}
	var routes []string
	for _, rp := range routePorts {
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(rp))
	}
	members := make([]*member, n)
	for i := range n {
		cfg := ServerConfig{
			Name:          "m" + strconv.Itoa(i),
			StoreDir:      t.TempDir(),
			Listen:        "127.0.0.1:" + strconv.Itoa(clientPorts[i]),
			ClusterName:   "tern-test",
			ClusterListen: "127.0.0.1:" + strconv.Itoa(routePorts[i]),
			Routes:        routes,
		}
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), memberEnv+"="+string(js))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		m := &member{name: cfg.Name, url: "nats://" + cfg.Listen, cmd: cmd}
		members[i] = m
		t.Cleanup(func() {
			m.cmd.Process.Kill()
			m.cmd.Wait()
		})
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			t.Fatalf("member %s: %q %v", cfg.Name, line, err)
		}
	}
	return members
}

// TestClusterMemberKilled: a 3-member cluster of separate processes, R3
// stream; the stream's leader is SIGKILLed while writers append and put
// checkpoints; they go on, and everything acknowledged reads back.
func TestClusterMemberKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster of 3 processes and a leader election: several seconds")
	}
	members := startCluster(t, 3)
	var urls []string
	for _, m := range members {
		urls = append(urls, m.url)
	}
	e, err := Connect(testCtx(t, 30*time.Second), urls, Config{Replicas: 3, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	u, err := e.Acquire(testCtx(t, 10*time.Second), "amf1")
	if err != nil {
		t.Fatal(err)
	}

	// Writers append concurrently: on a replicated stream their epoch
	// checks collide and are retried (Stats.Retries), never lost.
	const writers, perPhase = 4, 40
	var (
		mu    sync.Mutex
		acked = map[uint64][]byte{}
	)
	phase := func(name string) {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := range perPhase {
					ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
					data := fmt.Appendf(nil, "%s w%d #%d", name, w, i)
					seq, err := u.Append(ctx, data)
					cancel()
					if err != nil {
						errs <- fmt.Errorf("%s: writer %d append %d: %w", name, w, i, err)
						return
					}
					mu.Lock()
					acked[seq] = data
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	checkpoint := func(data string, rev uint64) uint64 {
		t.Helper()
		r, err := u.PutCheckpoint(testCtx(t, 15*time.Second), "ctx", []byte(data), rev)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	phase("before")
	rev := checkpoint("c1", 0)

	info, err := e.stream.Info(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream not replicated on 3: %+v", info.Cluster)
	}
	var leader *member
	for _, m := range members {
		if m.name == info.Cluster.Leader {
			leader = m
		}
	}
	if leader == nil {
		t.Fatalf("leader %q is not a member", info.Cluster.Leader)
	}
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	leader.cmd.Wait()
	t.Logf("killed stream leader %s", leader.name)

	phase("after")
	rev = checkpoint("c2", rev)

	data, got, err := e.GetCheckpoint(testCtx(t, 10*time.Second), "amf1", "ctx")
	if err != nil || string(data) != "c2" || got != rev {
		t.Fatalf("checkpoint after the kill: %q at %d (%v), want c2 at %d", data, got, err, rev)
	}
	var replayed int
	err = e.ReplayFrom(testCtx(t, 15*time.Second), "amf1", 0, func(seq uint64, data []byte) error {
		if want, ok := acked[seq]; ok {
			if !bytes.Equal(data, want) {
				return fmt.Errorf("entry %d: %q, acknowledged %q", seq, data, want)
			}
			replayed++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if replayed != len(acked) || len(acked) != 2*writers*perPhase {
		t.Fatalf("replayed %d of %d acknowledged entries (%d appended)", replayed, len(acked), 2*writers*perPhase)
	}

	// Fencing holds on the cluster too.
	second, err := e.Acquire(testCtx(t, 10*time.Second), "amf1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Append(testCtx(t, 10*time.Second), []byte("stale")); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale append on the cluster: %v, want ErrFenced", err)
	}
	if _, err := second.Append(testCtx(t, 10*time.Second), []byte("new")); err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v", e.Stats())
}
