package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/store"
)

// unitConfig is a unit on the store at path, on free ports, without TUN
// devices.
func unitConfig(t *testing.T, path string, demo int) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Log.Level = "error"
	cfg.Store.Path, cfg.Store.DemoSubscribers = path, demo
	port, err := freeport.UDP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.AMF.SCTP.Transport, cfg.AMF.SCTP.UDPPort = sctp.TransportUDP, port
	cfg.UPF.N3Addr, cfg.UPF.NoN6 = "127.0.0.1:0", true
	return cfg
}

// failingStart is a unit whose Start fails: its N3 address is taken.
func failingStart(t *testing.T, path string, demo int) *Core {
	t.Helper()
	held, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	cfg := unitConfig(t, path, demo)
	cfg.UPF.N3Addr = held.LocalAddr().String()
	c, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDiscardRemovesCreatedStore: a unit whose start fails removes the store
// it created, with the directories made for it, and provisions no demo
// subscribers into it.
func TestDiscardRemovesCreatedStore(t *testing.T) {
	top := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(top, "subscribers.db")
	c := failingStart(t, path, 10)
	if n, err := c.Store().Len(); err != nil || n != 0 {
		t.Fatalf("New provisioned %d subscribers (%v): the demo subscribers come when the start succeeded", n, err)
	}
	if err := c.Start(context.Background()); err == nil {
		t.Fatal("Start with its N3 address taken succeeded")
	}
	c.Discard()
	if _, err := os.Stat(top); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed start left %s behind (%v)", top, err)
	}
}

// TestFailedStartKeepsStoreInUse: two units start on a new store at once.
// The one that created it fails (its N3 port is taken) after the other has
// opened it and runs: the failed start leaves the store, which the running
// unit goes on using. Removing it would unlink the running unit's live
// database, -wal and -shm, and what it writes next would be lost.
func TestFailedStartKeepsStoreInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "subscribers.db")
	failed := failingStart(t, path, 10) // creates the store
	if failed.created == nil {
		t.Fatal("the first unit did not create the store")
	}
	// No demo subscribers in the running one: only its being open keeps
	// the store.
	running, err := New(unitConfig(t, path, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	if err := running.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := failed.Start(context.Background()); err == nil {
		t.Fatal("Start with its N3 address taken succeeded")
	}
	failed.Discard()

	sub := store.DefaultSubscribers(1)[0]
	if err := running.Store().Put(sub); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("the running unit's store is gone: %v", err)
	}
	defer st.Close()
	if _, err := st.Get(sub.SUPI); err != nil {
		t.Fatalf("what the running unit wrote is not in %s: %v", path, err)
	}
}

// TestNFUDRProvisionsOnStart: tern nf udr, like the unit, provisions the
// demo subscribers when it starts, not when it is built.
func TestNFUDRProvisionsOnStart(t *testing.T) {
	cfg := config.Default()
	cfg.Log.Level = "error"
	cfg.Store.Path, cfg.Store.DemoSubscribers = filepath.Join(t.TempDir(), "subscribers.db"), 3
	port, err := freeport.TCP()
	if err != nil {
		t.Fatal(err)
	}
	cfg.SBI.Listen["udr"] = net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	n, err := NewNF(cfg, "udr", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if k, err := n.store.Len(); err != nil || k != 0 {
		t.Fatalf("NewNF provisioned %d subscribers (%v), want none before Start", k, err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k, err := n.store.Len(); err != nil || k != 3 {
		t.Fatalf("%d subscribers after Start (%v), want 3", k, err)
	}
	// They have the UDR's SQN reservation: a first allocation needs no
	// durable write.
	syncs := n.store.Syncs()
	if _, err := n.store.IncrementSQN(store.DemoSUPI(1)); err != nil {
		t.Fatal(err)
	}
	if n.store.Syncs() != syncs {
		t.Error("the first SQN of a demo subscriber needed a durable write: provisioned without the UDR's reservation")
	}
}
