package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// pgStartTimeout bounds initdb plus the server's start.
const pgStartTimeout = 60 * time.Second

// pgServer is a throwaway PostgreSQL server in a temporary directory,
// shared by the tests of this package (each test gets its own database) and
// stopped by TestMain.
type pgServer struct {
	dir      string
	data     string
	port     int
	postgres string
	cred     *syscall.Credential
	cmd      *exec.Cmd
	dbs      atomic.Int64
	// exited receives the server's exit once.
	exited chan error
}

var pgTest struct {
	once sync.Once
	srv  *pgServer
	skip string // why PostgreSQL tests are skipped
}

// postgresDSN returns the connection string of a new, empty database on the
// test server, or skips t.
func postgresDSN(t testing.TB) string {
	t.Helper()
	pgTest.once.Do(func() {
		srv, err := startPostgres()
		if err != nil {
			pgTest.skip = err.Error()
			return
		}
		pgTest.srv = srv
	})
	if pgTest.srv == nil {
		t.Skipf("no PostgreSQL server for the tests: %s", pgTest.skip)
	}
	name := fmt.Sprintf("t%d", pgTest.srv.dbs.Add(1))
	admin, err := sql.Open("pgx", pgTest.srv.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	return pgTest.srv.dsn(name)
}

func (p *pgServer) dsn(db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=tern dbname=%s sslmode=disable", p.port, db)
}

// findInitdb looks on PATH, then where Debian installs it.
func findInitdb() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return p, nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", errors.New("initdb not found on PATH or in /usr/lib/postgresql/*/bin")
}

// serverCredential is whom the server runs as: PostgreSQL refuses to run
// as root, so as root the tests run it as postgres (or nobody).
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run the server as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startPostgres() (*pgServer, error) {
	initdb, err := findInitdb()
	if err != nil {
		return nil, err
	}
	postgres, err := exec.LookPath("postgres")
	if err != nil {
		if postgres, err = exec.LookPath(filepath.Join(filepath.Dir(initdb), "postgres")); err != nil {
			return nil, errors.New("postgres not found on PATH or beside initdb")
		}
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tern-pg-")
	if err != nil {
		return nil, err
	}
	p := &pgServer{dir: dir}
	ok := false
	defer func() {
		if !ok {
			p.stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgStartTimeout)
	defer cancel()
	data := filepath.Join(dir, "data")
	cmd := exec.CommandContext(ctx, initdb, "-D", data, "-U", "tern", "--auth=trust", "-E", "UTF8", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	if p.port, err = freePort(); err != nil {
		return nil, err
	}
	p.postgres, p.cred, p.data = postgres, cred, data
	if err := p.run(ctx); err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

// run starts the server on p's data directory and port and waits until it
// answers.
func (p *pgServer) run(ctx context.Context) error {
	// fsync off: the server is thrown away; what the tests check is tern's
	// use of transactions, not the disk.
	p.cmd = exec.Command(p.postgres, "-D", p.data, "-p", strconv.Itoa(p.port), "-k", p.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	p.cmd.Env = []string{"LC_ALL=C"}
	logFile, err := os.OpenFile(filepath.Join(p.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own copy
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	p.exited = make(chan error, 1)
	exited := p.exited
	go func() { exited <- p.cmd.Wait() }()
	for {
		db, err := sql.Open("pgx", p.dsn("postgres"))
		if err == nil {
			err = db.PingContext(ctx)
			db.Close()
		}
		if err == nil {
			return nil
		}
		select {
		case werr := <-p.exited:
			p.cmd = nil // already reaped
			return fmt.Errorf("postgres exited: %v: %s", werr, p.serverLog())
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready after %v: %v: %s", pgStartTimeout, err, p.serverLog())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// halt shuts the server down and keeps its data, for run to start again.
func (p *pgServer) halt() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
		p.cmd = nil
	}
}

// stop shuts the server down (fast shutdown, then a kill) and removes its
// directory.
func (p *pgServer) stop() {
	p.halt()
	os.RemoveAll(p.dir)
}

func (p *pgServer) serverLog() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
	return string(b)
}

// TestOpenPostgresReadOnly: a read-only open of a PostgreSQL store creates
// and migrates nothing (a newer tern's subscriber list must not migrate a
// store an older core runs on), reads what is there, and the server
// refuses its writes.
func TestOpenPostgresReadOnly(t *testing.T) {
	dsn := postgresDSN(t)
	if _, err := OpenDriverReadOnly(DriverPostgres, dsn); err == nil || !strings.Contains(err.Error(), "no subscriber table") {
		t.Fatalf("read-only open of an empty database: %v", err)
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var tables int
	if err := admin.QueryRow(`SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("%d tables after a read-only open (%v), want none", tables, err)
	}

	w, err := OpenPostgres(dsn)
	if err != nil {
		t.Fatal(err)
	}
	sub := DefaultSubscribers(1)[0]
	if err := w.Put(sub); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := OpenDriverReadOnly(DriverPostgres, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.List(); err != nil || len(got) != 1 {
		t.Fatalf("List: %d, %v", len(got), err)
	}
	if err := r.Delete(sub.SUPI); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Delete on a read-only store: %v", err)
	}
	r.Close()

	// A store of an older schema (as an older tern's) stays as it is.
	if _, err := admin.Exec(`UPDATE schema_version SET version = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDriverReadOnly(DriverPostgres, dsn); err == nil || !strings.Contains(err.Error(), "older than") {
		t.Fatalf("read-only open of an older schema: %v", err)
	}
	var v int
	if err := admin.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&v); err != nil || v != 1 {
		t.Fatalf("schema version %d after a read-only open (%v), want 1: migrated", v, err)
	}
}
