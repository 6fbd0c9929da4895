package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/smf"
)

// unixGet asks the operator API at sock for path.
func unixGet(t *testing.T, sock, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
	defer c.CloseIdleConnections()
	rsp, err := c.Get("http://tern" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	b, _ := io.ReadAll(rsp.Body)
	return rsp.StatusCode, string(b)
}

// TestOperatorSocket: the socket is the user's only, a second server on
// it is refused while the first serves, a stale one (its process gone) is
// replaced, anything else in the way is left alone, and Close removes it.
func TestOperatorSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "tern.sock")
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "one") })
	s, err := ServeOperator(sock, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v mode %v, want a socket with mode 0600", err, fi.Mode())
	}
	if code, body := unixGet(t, sock, "/"); code != 200 || body != "one" {
		t.Fatalf("GET: %d %q", code, body)
	}
	if _, err := ServeOperator(sock, h, nil); err == nil || !strings.Contains(err.Error(), "served by another process") {
		t.Fatalf("second server on a served socket: %v", err)
	}
	if code, body := unixGet(t, sock, "/"); code != 200 || body != "one" {
		t.Fatalf("the first server lost its socket: %d %q", code, body)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left after Close: %v", err)
	}

	// A stale socket: bound, then its listener gone without unlinking it
	// (as a killed core leaves it).
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("no stale socket to test with: %v", err)
	}
	s, err = ServeOperator(sock, h, nil)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	s.Close()

	// A file that is not a socket stays.
	if err := os.WriteFile(sock, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ServeOperator(sock, h, nil); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("regular file in the way: %v", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "mine" {
		t.Fatal("the file in the way was changed")
	}
	long := filepath.Join(dir, strings.Repeat("d", 120), "tern.sock")
	if _, err := ServeOperator(long, h, nil); err == nil || !strings.Contains(err.Error(), "longer than a unix socket") {
		t.Fatalf("long path: %v", err)
	}
}

// TestOperatorSocketPath: the socket is the store's: stores in one
// directory, or PostgreSQL databases, each have their own, and
// operator.socket overrides.
func TestOperatorSocketPath(t *testing.T) {
	cfg := config.Default()
	cfg.Store.Path = "/var/lib/tern/a.db"
	if got := OperatorSocket(cfg); got != "/var/lib/tern/a.db.sock" {
		t.Errorf("OperatorSocket = %s", got)
	}
	cfg.Store.Path = "/var/lib/tern/b.db"
	if got := OperatorSocket(cfg); got != "/var/lib/tern/b.db.sock" {
		t.Errorf("OperatorSocket of another store in the same directory = %s", got)
	}
	cfg.Store.Driver = "postgres"
	cfg.Store.DSN = "postgres://tern@db.example:5433/core1"
	if got := OperatorSocket(cfg); got != "/var/lib/tern/tern-db.example_5433_core1.sock" {
		t.Errorf("OperatorSocket with postgres = %s", got)
	}
	cfg.Store.DSN = "host=/run/postgresql dbname=core2"
	if got := OperatorSocket(cfg); got != "/var/lib/tern/tern-_run_postgresql_5432_core2.sock" {
		t.Errorf("OperatorSocket with postgres over a unix socket = %s", got)
	}
	cfg.Store.Path = ""
	if got, want := OperatorSocket(cfg), filepath.Join(filepath.Dir(config.DefaultStorePath()), "tern-_run_postgresql_5432_core2.sock"); got != want {
		t.Errorf("OperatorSocket with postgres and no path = %s, want %s", got, want)
	}
	cfg.Operator.Socket = "/run/tern/ue.sock"
	if got := OperatorSocket(cfg); got != "/run/tern/ue.sock" {
		t.Errorf("OperatorSocket with operator.socket = %s", got)
	}
}

// TestOperatorAPIRequests: only GET, a malformed SUPI is 400, an unknown
// one 404, both as problem details.
func TestOperatorAPIRequests(t *testing.T) {
	srv := httptest.NewServer(newOperatorHandler(fakeUEs{}, nil, time.Second))
	defer srv.Close()
	for _, c := range []struct {
		method, path string
		code         int
		detail       string
	}{
		{"GET", "/ues", 200, ""},
		{"GET", "/ues/imsi-208930000000001", 200, ""},
		{"GET", "/ues/imsi-208930000000002", 404, "no UE context for imsi-208930000000002"},
		{"GET", "/ues/bogus", 400, `"bogus" is not a SUPI`},
		{"POST", "/ues", 405, ""},
		{"DELETE", "/ues/imsi-208930000000001", 405, ""},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		rsp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rsp.Body)
		rsp.Body.Close()
		var p Problem
		if c.code >= 400 && c.code != 405 {
			if err := json.Unmarshal(b, &p); err != nil || p.Status != c.code {
				t.Errorf("%s %s: problem %s: %v", c.method, c.path, b, err)
			}
		}
		if rsp.StatusCode != c.code || !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s %s: %d %s, want %d %q", c.method, c.path, rsp.StatusCode, b, c.code, c.detail)
		}
		if c.code == 405 && rsp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
		if c.code >= 400 && c.code != 405 && rsp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: content type %q", c.method, c.path, rsp.Header.Get("Content-Type"))
		}
	}
}

// fakeUEs holds one UE, imsi-208930000000001.
type fakeUEs struct{}

func (fakeUEs) UEs(context.Context) ([]amf.UEInfo, int, error) {
	return []amf.UEInfo{{SUPI: "imsi-208930000000001", RM: "RM-REGISTERED", CM: "CM-IDLE", Procedure: "none"}}, 0, nil
}

func (f fakeUEs) UE(_ context.Context, supi string) (amf.UEInfo, error) {
	if supi != "imsi-208930000000001" {
		return amf.UEInfo{}, fmt.Errorf("%s: %w", supi, amf.ErrNoUE)
	}
	l, _, _ := f.UEs(context.Background())
	return l[0], nil
}

// TestUEViewJoin: the AMF's sessions get the SMF's address, state and UPF
// by PDU session ID; one only the SMF holds (an establishment between
// them) is shown too.
func TestUEViewJoin(t *testing.T) {
	sn := identity.SNSSAI{SST: 1, SD: 0x010203}
	u := amf.UEInfo{SUPI: "imsi-208930000000001", Sessions: []amf.PDUSessionInfo{
		{ID: 1, DNN: "internet", SNSSAI: sn, SMContextRef: "1", UserPlane: "active"},
		{ID: 3, DNN: "ims", SNSSAI: sn, SMContextRef: "3", UserPlane: "deactivated"},
	}}
	at := []smf.SessionInfo{
		{ID: 1, Ref: "1", DNN: "internet", SNSSAI: sn, UEIP: netip.MustParseAddr("10.60.0.2"), State: "active", UpCnx: "ACTIVATED", UPF: "upf", UPFN3: netip.MustParseAddr("10.100.3.2")},
		{ID: 2, Ref: "2", DNN: "internet", SNSSAI: sn, UEIP: netip.MustParseAddr("10.60.0.3"), State: "establishing", UpCnx: "ACTIVATING", UPF: "upf"},
	}
	v := ueView(u, at, true)
	got, _ := json.Marshal(v.Sessions)
	want := `[{"pduSessionId":1,"dnn":"internet","snssai":"1-010203","ueIp":"10.60.0.2","state":"active","userPlane":"active","upCnxState":"ACTIVATED","upf":"upf","upfN3":"10.100.3.2","smContextRef":"1"},` +
		`{"pduSessionId":3,"dnn":"ims","snssai":"1-010203","userPlane":"deactivated","smContextRef":"3"},` +
		`{"pduSessionId":2,"dnn":"internet","snssai":"1-010203","ueIp":"10.60.0.3","state":"establishing","upCnxState":"ACTIVATING","upf":"upf","smContextRef":"2"}]`
	if string(got) != want {
		t.Errorf("sessions\n got %s\nwant %s", got, want)
	}
}

// TestNFOperatorHandler: in multi-process mode the AMF's process serves
// the API, saying that UE IPs are the SMF's; other NFs serve none.
func TestNFOperatorHandler(t *testing.T) {
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(t.TempDir(), "subscribers.db")
	for _, name := range []string{"amf", "nssf"} {
		port, err := freeport.TCP()
		if err != nil {
			t.Fatal(err)
		}
		cfg.SBI.Listen[name] = fmt.Sprintf("127.0.0.1:%d", port)
	}
	n, err := NewNF(cfg, "nssf", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.OperatorHandler() != nil {
		t.Error("the NSSF serves the operator API")
	}
	a, err := NewNF(cfg, "amf", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.OperatorHandler())
	defer srv.Close()
	rsp, err := srv.Client().Get(srv.URL + "/ues")
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	var l UEList
	if err := json.NewDecoder(rsp.Body).Decode(&l); err != nil || rsp.StatusCode != 200 || l.SMF || len(l.UEs) != 0 {
		t.Errorf("GET /ues of tern nf amf: %d %+v %v; want no UEs and smf false", rsp.StatusCode, l, err)
	}
}

// busyAMF has one UE ready and one whose executor stays busy for the whole
// deadline.
type busyAMF struct{ fakeUEs }

func (busyAMF) UEs(ctx context.Context) ([]amf.UEInfo, int, error) {
	<-ctx.Done()
	l, _, _ := fakeUEs{}.UEs(ctx)
	return l, 1, nil
}

// quickSMF answers at once, unless its deadline has already passed.
type quickSMF struct{}

func (quickSMF) Sessions(ctx context.Context, supi string) ([]smf.SessionInfo, error) {
	all, _, err := quickSMF{}.AllSessions(ctx)
	return all[supi], err
}

func (quickSMF) AllSessions(ctx context.Context) (map[string][]smf.SessionInfo, int, error) {
	if ctx.Err() != nil {
		return nil, 1, nil
	}
	return map[string][]smf.SessionInfo{"imsi-208930000000001": {{ID: 1, DNN: "internet", UEIP: netip.MustParseAddr("10.60.0.2"), State: "active"}}}, 0, nil
}

// TestUEListBusyAMFLeavesSMF: a UE busy at the AMF for the whole deadline
// costs the list that UE, not every UE's sessions: the SMF's snapshot has
// a deadline of its own.
func TestUEListBusyAMFLeavesSMF(t *testing.T) {
	srv := httptest.NewServer(newOperatorHandler(busyAMF{}, quickSMF{}, 100*time.Millisecond))
	defer srv.Close()
	rsp, err := srv.Client().Get(srv.URL + "/ues")
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	var l UEList
	if err := json.NewDecoder(rsp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	if l.Busy != 1 || l.SessionsBusy != 0 || len(l.UEs) != 1 || len(l.UEs[0].Sessions) != 1 || l.UEs[0].Sessions[0].UEIP != "10.60.0.2" {
		t.Fatalf("list %+v: want one UE with its session's address, one busy at the AMF, none at the SMF", l)
	}
}

// TestOperatorSocketLock: the server of a socket holds its lock: a second
// server is refused even where the socket file is gone or looks stale (as
// when two start at once and the first has just removed a stale socket),
// so it cannot take the path from the first; once the first stops, the
// next serves, and nothing is left behind.
func TestOperatorSocketLock(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "subscribers.db.sock")
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "one") })
	first, err := ServeOperator(sock, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The socket file removed under the first server (a racing starter's
	// removal of what it took for a stale socket).
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	if _, err := ServeOperator(sock, h, nil); !errors.Is(err, ErrOperatorSocketInUse) {
		t.Fatalf("second server while the first serves: %v, want ErrOperatorSocketInUse", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := ServeOperator(sock, h, nil)
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	if code, body := unixGet(t, sock, "/"); code != 200 || body != "one" {
		t.Fatalf("GET: %d %q", code, body)
	}
	second.Close()
	if left, _ := filepath.Glob(sock + "*"); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// Many at once over a stale socket: one serves, the others are told.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	var wg sync.WaitGroup
	servers := make(chan *OperatorServer, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := ServeOperator(sock, h, nil)
			if err == nil {
				servers <- s
			} else if !errors.Is(err, ErrOperatorSocketInUse) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(servers)
	n := 0
	for s := range servers {
		n++
		defer s.Close()
	}
	if n != 1 {
		t.Fatalf("%d servers on one socket, want 1", n)
	}
	if code, _ := unixGet(t, sock, "/"); code != 200 {
		t.Fatalf("GET: %d", code)
	}
}

// TestOperatorSocketOtherUser: a process of another user is refused
// whatever the socket's mode (it has the umask's until the chmod after the
// bind): here the socket and its directory are opened to everyone, and
// curl run as nobody gets no answer.
func TestOperatorSocketOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a client as another user")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("needs curl, the client run as another user")
	}
	dir, err := os.MkdirTemp("", "tern-operator-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "subscribers.db.sock")
	s, err := ServeOperator(sock, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secret") }), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, mode := range map[string]os.FileMode{dir: 0o755, sock: 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	get := func(cred *syscall.Credential) (string, error) {
		cmd := exec.Command(curl, "-sS", "--max-time", "5", "--unix-socket", sock, "http://tern/ues")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := get(nil); err != nil || out != "secret" {
		t.Fatalf("curl as root: %q, %v", out, err)
	}
	if out, err := get(&syscall.Credential{Uid: 65534, Gid: 65534}); err == nil || strings.Contains(out, "secret") {
		t.Fatalf("curl as nobody was answered: %q", out)
	}
}

// TestStartOperatorWithoutSocket: a socket that cannot be made (its
// directory under a regular file, as under a read-only $HOME) leaves the
// process without the operator API, saying so, not without a start; a
// socket another process serves still refuses it.
func TestStartOperatorWithoutSocket(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Operator.Socket = filepath.Join(file, "tern.sock")
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	s, err := StartOperator(cfg, http.NotFoundHandler(), log)
	if s != nil || err != nil {
		t.Fatalf("StartOperator where no socket can be made: %v, %v; want neither", s, err)
	}
	if !strings.Contains(logged.String(), "running without the operator API") {
		t.Errorf("not said: %q", logged.String())
	}
	s.Close() // nothing to close

	cfg.Operator.Socket = filepath.Join(dir, "tern.sock")
	first, err := StartOperator(cfg, http.NotFoundHandler(), log)
	if err != nil || first == nil {
		t.Fatalf("StartOperator: %v", err)
	}
	defer first.Close()
	if _, err := StartOperator(cfg, http.NotFoundHandler(), log); !errors.Is(err, ErrOperatorSocketInUse) {
		t.Fatalf("StartOperator on a served socket: %v, want ErrOperatorSocketInUse", err)
	}
}
