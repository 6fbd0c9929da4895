package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/core"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/internal/syncbuf"
	"github.com/tern5g/tern/lab"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/store"
)

// TestLabConfig: --lab puts N2, N3 and the SMF's view of the UPF on the
// lab's core address, over SCTP over UDP, with N6 TUNs the lab routes, and
// the result validates.
func TestLabConfig(t *testing.T) {
	cfg := config.Default()
	if err := labConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("lab config does not validate: %v", err)
	}
	core := lab.CoreN3.String()
	if cfg.AMF.N2Address != core+":38412" || cfg.AMF.SCTP.Transport != "udp" || cfg.UPF.N3Addr != core+":2152" || cfg.UPF.NoN6 {
		t.Errorf("lab config: n2 %s (%s), n3 %s, noN6 %v", cfg.AMF.N2Address, cfg.AMF.SCTP.Transport, cfg.UPF.N3Addr, cfg.UPF.NoN6)
	}
	if cfg.SMF.UPFs[0].N3 != core {
		t.Errorf("smf.upfs[0].n3 = %s, want %s", cfg.SMF.UPFs[0].N3, core)
	}
	for _, n := range cfg.UPF.N6 {
		if n.TUN != lab.TUN(n.DNN) {
			t.Errorf("N6 of %s on %q; the lab routes %q", n.DNN, n.TUN, lab.TUN(n.DNN))
		}
	}
	// The defaults themselves are untouched (the SMF's UPF list is copied).
	if config.Default().SMF.UPFs[0].N3 == core {
		t.Error("labConfig changed the defaults' smf.upfs")
	}
}

// TestUpReadyLineFollowsReadiness: tern up whose only UPF is not running
// does not print "tern core ready" (its /readyz says 503): it says what it
// waits for, and stops cleanly.
func TestUpReadyLineFollowsReadiness(t *testing.T) {
	cfg := config.Default()
	n4, upfAddr := freeport.Loopback(), freeport.Loopback() // addresses of their own in 127/8
	udp, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.AMF.N2Address = netip.AddrPortFrom(n4, 38412).String()
	cfg.AMF.SCTP.Transport, cfg.AMF.SCTP.UDPPort = sctp.TransportUDP, udp
	cfg.UPF.Embedded = false
	cfg.SMF.NodeID, cfg.SMF.N4Address = n4.String(), n4.String()
	cfg.SMF.UPFs = []smf.UPFConfig{{Name: "upf", N4: netip.AddrPortFrom(upfAddr, 8805).String(), N3: upfAddr.String(), DNNs: []string{"internet", "ims"}}}
	cfg.Log.Level = "error"
	b, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tern.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- up(ctx, []string{"--config", path, "--store", filepath.Join(dir, "subs.db"), "--demo-subscribers", "1"}, &out)
	}()
	const waiting = "tern core started, not ready yet: no UPF associated (upf down)\n"
	deadline := time.Now().Add(readyQuiet + 5*time.Second)
	for !strings.Contains(out.String(), waiting) && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("tern up ended: %v; printed %q", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tern up: %v", err)
	}
	if got := out.String(); got != waiting {
		t.Fatalf("tern up printed %q, want only %q", got, waiting)
	}
}

// awaitReady returns as soon as the core is ready, saying nothing when
// that takes less than the quiet period.
func TestAwaitReady(t *testing.T) {
	var out bytes.Buffer
	calls := 0
	ready := func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("no UPF associated (upf down)")
		}
		return nil
	}
	if !awaitReady(context.Background(), ready, time.Minute, &out) || out.Len() != 0 {
		t.Fatalf("awaitReady: printed %q", out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if awaitReady(ctx, func() error { return fmt.Errorf("N2 not listening") }, 0, &out) {
		t.Fatal("ready after ctx ended")
	}
	if out.String() != "tern core started, not ready yet: N2 not listening\n" {
		t.Fatalf("printed %q", out.String())
	}
}

// TestFailedStartLeavesNoStore: a start that fails after the store was
// created and given its demo subscribers (the N3 port taken: the UPF does
// not start; a capture file that cannot be made: the core is not built)
// removes that store and the directories made for it; a store that was
// there before stays.
func TestFailedStartLeavesNoStore(t *testing.T) {
	held, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	n2, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, fault := range []string{
		"upf:\n  noN6: true\n  n3Addr: " + held.LocalAddr().String() + "\n",
		"capture: " + filepath.Join(dir, "none", "n2.pcap") + "\nupf:\n  noN6: true\n",
	} {
		db := filepath.Join(dir, fmt.Sprint("new", i), "deeper", "subs.db")
		cfgPath := filepath.Join(dir, fmt.Sprint("tern", i, ".yaml"))
		doc := fmt.Sprintf("log:\n  level: error\nstore:\n  path: %s\n  demoSubscribers: 10\namf:\n  sctp:\n    transport: udp\n    udpPort: %d\n%s", db, n2, fault)
		if err := os.WriteFile(cfgPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := runUp([]string{"--config", cfgPath}); err == nil {
			t.Fatalf("%q: tern up started", fault)
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprint("new", i))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: the failed start left %s behind (%v)", fault, filepath.Dir(db), err)
		}

		// A store that was there stays, with its subscribers.
		st, err := store.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		mine := store.DefaultSubscribers(11)[10]
		if err := st.Put(mine); err != nil {
			t.Fatal(err)
		}
		st.Close()
		if err := runUp([]string{"--config", cfgPath}); err == nil {
			t.Fatalf("%q: tern up started", fault)
		}
		st, err = store.Open(db)
		if err != nil {
			t.Fatalf("%q: the store that was there: %v", fault, err)
		}
		_, err = st.Get(mine.SUPI)
		st.Close()
		if err != nil {
			t.Errorf("%q: the store that was there lost its subscriber: %v", fault, err)
		}
	}
}

// TestFailedStartKeepsImportedSubscribers: tern subscriber import --csv
// into the store a starting core has just created, then the start fails
// (its N3 port taken): the failed start removes nothing, and the imported
// subscribers stay. It does not remove the store while the import still
// has it open either.
func TestFailedStartKeepsImportedSubscribers(t *testing.T) {
	held, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	dir := t.TempDir()
	csv := writeFile(t, "subs.csv", "imsi,k,opc\n208930000000101,"+csvK+","+csvOPc+"\n208930000000102,"+csvK+","+csvOPc+"\n")
	for i, importerOpen := range []bool{false, true} {
		db := filepath.Join(dir, fmt.Sprint("new", i), "subs.db")
		cfg := config.Default()
		cfg.Log.Level = "error"
		cfg.Store.Path, cfg.Store.DemoSubscribers = db, 10
		udp, err := freeport.UDP()
		if err != nil {
			t.Fatal(err)
		}
		cfg.AMF.SCTP.Transport, cfg.AMF.SCTP.UDPPort = sctp.TransportUDP, udp
		cfg.UPF.NoN6, cfg.UPF.N3Addr = true, held.LocalAddr().String()
		c, err := core.New(cfg, nil) // creates the store
		if err != nil {
			t.Fatal(err)
		}
		if err := runSubscriber([]string{"import", "--store", db, "--csv", csv}); err != nil {
			t.Fatal(err)
		}
		var importer *store.Store
		if importerOpen {
			// Another process still has the store open (and empty: its
			// rows deleted again), as an import that has not finished.
			if importer, err = store.Open(db); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"imsi-208930000000101", "imsi-208930000000102"} {
				if err := importer.Delete(s); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := c.Start(context.Background()); err == nil {
			t.Fatal("a start with its N3 address taken succeeded")
		}
		c.Discard()
		if importer != nil {
			if err := importer.Put(store.DefaultSubscribers(1)[0]); err != nil {
				t.Fatal(err)
			}
			importer.Close()
		}
		if n := storeLen(t, db); n != 2-i {
			t.Errorf("importer open %v: %d subscribers in %s after the failed start, want %d", importerOpen, n, db, 2-i)
		}
	}
}

// upConfig writes a configuration for tern up on the store at db, on free
// ports, without TUN devices, with extra YAML appended; it returns the
// file's path.
func upConfig(t *testing.T, db, extra string) string {
	t.Helper()
	n2, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf("log:\n  level: error\nstore:\n  path: %s\n  demoSubscribers: 1\namf:\n  sctp:\n    transport: udp\n    udpPort: %d\nupf:\n  noN6: true\n  n3Addr: 127.0.0.1:0\n%s", db, n2, extra)
	p := filepath.Join(t.TempDir(), "tern.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startUp runs tern up with args until the test ends, once it printed its
// ready line.
func startUp(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- up(ctx, args, &out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tern up: %v", err)
		}
	})
	deadline := time.After(20 * time.Second)
	for !strings.Contains(out.String(), "tern core ready") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("tern up ended: %v; printed %q", err, out.String())
		case <-deadline:
			t.Fatalf("tern up not ready; printed %q", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestUEListFindsItsStoresCore: cores on two stores in one directory each
// serve their own operator socket, and tern ue asks the one of the store
// it is given: with only the core on a.db running, --store b.db finds no
// core rather than a.db's.
func TestUEListFindsItsStoresCore(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	startUp(t, "--config", upConfig(t, a, ""))
	var out, errs strings.Builder
	if err := ueCommand([]string{"list", "--store", a}, &out); err != nil || !strings.Contains(out.String(), "no UEs") {
		t.Fatalf("ue list --store a.db: %v, %q", err, out.String())
	}
	errs.Reset()
	if code := run([]string{"ue", "list", "--store", b}, &out, &errs); code != 1 || !strings.Contains(errs.String(), b+".sock does not exist") {
		t.Fatalf("ue list --store b.db with no core on b.db: exit %d, stderr %q", code, errs.String())
	}
	startUp(t, "--config", upConfig(t, b, ""))
	if code := run([]string{"ue", "list", "--store", b}, &out, &errs); code != 0 {
		t.Fatalf("ue list --store b.db: exit %d, stderr %q", code, errs.String())
	}
}

// TestUpSecondCoreOnStoreRefused: a second tern up on the store of a
// running one (same configuration, so the same ports) is refused for its
// operator socket, which it claims before it binds N2 and N3, rather than
// for a port the first holds.
func TestUpSecondCoreOnStoreRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "subs.db")
	cfg := upConfig(t, db, "")
	startUp(t, "--config", cfg)
	err := up(context.Background(), []string{"--config", cfg}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "served by another process (a core already running on this store?)") {
		t.Fatalf("second tern up on the store: %v", err)
	}
	var out, errs strings.Builder
	if code := run([]string{"ue", "list", "--config", cfg}, &out, &errs); code != 0 {
		t.Fatalf("the first core lost its operator socket: exit %d, stderr %q", code, errs.String())
	}
}

// TestUpWithoutOperatorSocket: a tern up that cannot make its operator
// socket (its directory is under a regular file, as under a read-only
// $HOME) still starts, without tern ue.
func TestUpWithoutOperatorSocket(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	startUp(t, "--config", upConfig(t, filepath.Join(dir, "subs.db"), "operator:\n  socket: "+filepath.Join(file, "tern.sock")+"\n"))
}

// TestUEListWithDefaults: with the default store (here under a temporary
// $XDG_DATA_HOME), tern ue list needs no flag to find tern up.
func TestUEListWithDefaults(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	cfg := upConfig(t, config.DefaultStorePath(), "")
	startUp(t, "--config", cfg)
	var out strings.Builder
	if err := ueCommand([]string{"list"}, &out); err != nil || !strings.Contains(out.String(), "no UEs") {
		t.Fatalf("ue list: %v, %q", err, out.String())
	}
}
