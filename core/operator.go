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
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/httpserve"
	"github.com/tern5g/tern/internal/sockowner"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/store"
)

// The operator API: a read-only JSON view of the UEs a running core
// serves, for `tern ue list` and `tern ue show`:
//
//	GET /ues          every UE context (UEList)
//	GET /ues/{supi}   one (UEView); 404 when the AMF has none
//
// It is served over HTTP/1.1 on a unix socket that only the core's user
// (and root) may use, found from the store's configuration
// (OperatorSocket); docs/architecture.md says why a socket.
//
// The UE data comes from the AMF's state machine, each UE's snapshot taken
// on its executor (amf.AMF.UEs); the UE IPs and UPFs from the SMF's
// sessions, likewise (smf.SMF.AllSessions), where the SMF runs in the same
// process.

// OperatorSocket is where a core, or the AMF of `tern nf amf`, started
// with cfg serves the operator API: operator.socket, or else one socket
// per store, so that cores on different stores in one directory, and
// `tern ue` pointed at either, do not meet: the SQLite file with ".sock"
// added; for PostgreSQL, tern-<host>_<port>_<database>.sock in the
// directory of store.path.
func OperatorSocket(cfg config.Config) string {
	if cfg.Operator.Socket != "" {
		return cfg.Operator.Socket
	}
	p := cfg.Store.Path
	if p == "" {
		p = config.DefaultStorePath()
	}
	if cfg.Store.Driver != store.DriverPostgres {
		return p + ".sock"
	}
	db, err := store.PostgresDatabase(cfg.Store.DSN)
	if err != nil {
		db = "postgres" // the store does not open either
	}
	name := strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-') {
			return r
		}
		return '_'
	}, db)
	return filepath.Join(filepath.Dir(p), "tern-"+name+".sock")
}

// UEList is the answer of GET /ues.
type UEList struct {
	UEs []UEView `json:"ues"`
	// Busy counts the UE contexts whose executor was busy for the whole
	// snapshot deadline (an SBI call waiting for its own); they are left
	// out of UEs.
	Busy int `json:"busy,omitempty"`
	// SessionsBusy counts UEs whose sessions at the SMF could not be
	// read in time; their sessions show what the AMF knows.
	SessionsBusy int `json:"sessionsBusy,omitempty"`
	// SMF is false where no SMF runs in the process (tern nf amf): the
	// sessions then have no UE IP, state or UPF.
	SMF bool `json:"smf"`
}

// UEView is one UE context (GET /ues/{supi}, or an entry of UEList).
type UEView struct {
	SUPI string `json:"supi,omitempty"`
	// SUCI is given only while the UE is not identified yet.
	SUCI string `json:"suci,omitempty"`
	PEI  string `json:"pei,omitempty"`
	GUTI string `json:"guti,omitempty"`
	// RMState, CMState and Procedure are the AMF's state machine: RM-
	// REGISTERED or RM-DEREGISTERED (TS 23.501 §5.3.2.2), CM-CONNECTED or
	// CM-IDLE (§5.3.3.2), and the procedure running ("none").
	RMState   string `json:"rmState"`
	CMState   string `json:"cmState"`
	Procedure string `json:"procedure"`
	// Reachable is false once a CM-IDLE UE's mobile reachable timer has
	// expired (TS 24.501 §5.3.7): it is not paged.
	Reachable bool `json:"reachable"`
	// RAN is the serving N2 connection, absent in CM-IDLE; HandoverTarget
	// the target's during an N2 handover.
	RAN              *RANLegView   `json:"ran,omitempty"`
	HandoverTarget   *RANLegView   `json:"handoverTarget,omitempty"`
	RegistrationArea []string      `json:"registrationArea,omitempty"`
	AllowedNSSAI     []string      `json:"allowedNssai,omitempty"`
	Sessions         []SessionView `json:"sessions"`
	// LastActivity is when the AMF last accepted a 5GMM message from the
	// UE.
	LastActivity *time.Time `json:"lastActivity,omitempty"`
	// SMF is as in UEList; SessionsBusy says the SMF did not answer in
	// time, so the sessions show what the AMF knows.
	SMF          bool `json:"smf"`
	SessionsBusy bool `json:"sessionsBusy,omitempty"`
}

// RANLegView is one UE-associated logical NG-connection (TS 38.413 §3.1).
type RANLegView struct {
	// GNB is the Global gNB ID: PLMN, the gNB ID in hex (as many digits
	// as its 22-32 bits need) and its bit length, e.g. 20893-000001/22.
	GNB         string `json:"gnb"`
	GNBAddress  string `json:"gnbAddress"`
	AMFUENGAPID int64  `json:"amfUeNgapId"`
	RANUENGAPID int64  `json:"ranUeNgapId"`
	// State is the AMF's state of the connection (signalling, secured,
	// context, handover-preparing, handover-prepared, releasing).
	State string `json:"state"`
	TAI   string `json:"tai"`
	// Cell is the NR CGI: PLMN, then the 36-bit NR Cell Identity in hex.
	Cell string `json:"cell"`
}

// SessionView is one PDU session: the AMF's record joined with the SMF's.
type SessionView struct {
	ID     uint8  `json:"pduSessionId"`
	DNN    string `json:"dnn"`
	SNSSAI string `json:"snssai"`
	UEIP   string `json:"ueIp,omitempty"`
	// State is the SM context's state at the SMF (establishing,
	// wait-n2-setup, active, modifying, releasing).
	State string `json:"state,omitempty"`
	// UserPlane is the session's N2 resources as the AMF sees them
	// (none, activating, active, deactivated); UpCnxState the user-plane
	// connection as the SMF sees it (TS 29.502 UpCnxState: ACTIVATED,
	// DEACTIVATED, ACTIVATING). The two disagree while a change is in
	// flight between them, or when one of them is wrong.
	UserPlane    string `json:"userPlane,omitempty"`
	UpCnxState   string `json:"upCnxState,omitempty"`
	UPF          string `json:"upf,omitempty"`
	UPFN3        string `json:"upfN3,omitempty"`
	SMContextRef string `json:"smContextRef,omitempty"`
}

// UE contexts and sessions as the operator API reads them: the AMF and the
// SMF, or fakes in tests.
type (
	ueSource interface {
		UEs(ctx context.Context) ([]amf.UEInfo, int, error)
		UE(ctx context.Context, supi string) (amf.UEInfo, error)
	}
	sessionSource interface {
		Sessions(ctx context.Context, supi string) ([]smf.SessionInfo, error)
		AllSessions(ctx context.Context) (map[string][]smf.SessionInfo, int, error)
	}
)

// snapshotTimeout bounds how long one request waits for the UEs'
// executors, at the AMF and at the SMF each.
const snapshotTimeout = 2 * time.Second

// operatorAPI serves the operator API from an AMF and, where one runs in
// the process, an SMF.
type operatorAPI struct {
	ues      ueSource
	sessions sessionSource // nil: none in this process
	timeout  time.Duration // snapshotTimeout, shorter in tests
}

// OperatorHandler is the operator API of the unit.
func (c *Core) OperatorHandler() http.Handler {
	return newOperatorHandler(c.AMF, c.SMF, snapshotTimeout)
}

// OperatorHandler is the operator API of an AMF running as its own
// process, nil for other NFs. Its sessions carry what the AMF knows: the
// UE IPs and UPFs are the SMF's, in another process.
func (n *NF) OperatorHandler() http.Handler {
	if n.amf == nil {
		return nil
	}
	return newOperatorHandler(n.amf, nil, snapshotTimeout)
}

// newOperatorHandler serves the UEs of ues, joined with the sessions of
// sessions (nil where no SMF runs in the process), waiting at most timeout
// for each.
func newOperatorHandler(ues ueSource, sessions sessionSource, timeout time.Duration) http.Handler {
	api := &operatorAPI{ues: ues, sessions: sessions, timeout: timeout}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ues", api.list)
	mux.HandleFunc("GET /ues/{supi}", api.show)
	return mux
}

func (api *operatorAPI) list(w http.ResponseWriter, r *http.Request) {
	// The AMF's snapshots and the SMF's are taken at once, each with a
	// deadline of its own: a UE busy at the AMF for the whole deadline
	// must not leave the SMF an expired one, and every other UE's
	// sessions with it.
	type sessionsResult struct {
		bySUPI map[string][]smf.SessionInfo
		busy   int
		err    error
	}
	var sessions chan sessionsResult
	if api.sessions != nil {
		sessions = make(chan sessionsResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(r.Context(), api.timeout)
			defer cancel()
			var res sessionsResult
			res.bySUPI, res.busy, res.err = api.sessions.AllSessions(ctx)
			sessions <- res
		}()
	}
	ctx, cancel := context.WithTimeout(r.Context(), api.timeout)
	defer cancel()
	infos, busy, err := api.ues.UEs(ctx)
	var at sessionsResult
	if sessions != nil {
		at = <-sessions
	}
	if err == nil {
		err = at.err
	}
	if err != nil {
		problem(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out := UEList{UEs: make([]UEView, 0, len(infos)), Busy: busy, SessionsBusy: at.busy, SMF: api.sessions != nil}
	for _, u := range infos {
		out.UEs = append(out.UEs, ueView(u, at.bySUPI[u.SUPI], api.sessions != nil))
	}
	writeJSON(w, http.StatusOK, out)
}

func (api *operatorAPI) show(w http.ResponseWriter, r *http.Request) {
	supi := r.PathValue("supi")
	if _, err := identity.ParseSUPI(supi); err != nil {
		problem(w, http.StatusBadRequest, fmt.Sprintf("%q is not a SUPI (imsi-<6-15 digits>)", supi))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), api.timeout)
	defer cancel()
	u, err := api.ues.UE(ctx, supi)
	switch {
	case errors.Is(err, amf.ErrNoUE):
		problem(w, http.StatusNotFound, fmt.Sprintf("the AMF has no UE context for %s (not registered, or deregistered)", supi))
		return
	case err != nil:
		problem(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	var sessions []smf.SessionInfo
	busy := false
	if api.sessions != nil {
		// The AMF's view stands on its own: an SMF busy past the deadline
		// leaves the sessions as the AMF knows them, and says so. The
		// SMF's deadline is its own, as in list.
		sctx, cancel := context.WithTimeout(r.Context(), api.timeout)
		defer cancel()
		sessions, err = api.sessions.Sessions(sctx, supi)
		busy = err != nil
	}
	v := ueView(u, sessions, api.sessions != nil)
	v.SessionsBusy = busy
	writeJSON(w, http.StatusOK, v)
}

// ueView joins the AMF's snapshot of a UE with the SMF's of its sessions
// (withSMF: there is an SMF to join; sessions may then still be none).
func ueView(u amf.UEInfo, sessions []smf.SessionInfo, withSMF bool) UEView {
	v := UEView{SUPI: u.SUPI, SUCI: u.SUCI, PEI: u.PEI, RMState: u.RM, CMState: u.CM, Procedure: u.Procedure,
		Reachable: u.Reachable, RAN: legView(u.RAN), HandoverTarget: legView(u.Target), Sessions: []SessionView{}, SMF: withSMF}
	if u.GUTI != nil {
		v.GUTI = u.GUTI.String()
	}
	for _, t := range u.RegistrationArea {
		v.RegistrationArea = append(v.RegistrationArea, t.String())
	}
	for _, s := range u.AllowedNSSAI {
		v.AllowedNSSAI = append(v.AllowedNSSAI, s.String())
	}
	if !u.LastActivity.IsZero() {
		t := u.LastActivity
		v.LastActivity = &t
	}
	atSMF := map[uint8]smf.SessionInfo{}
	for _, s := range sessions {
		atSMF[s.ID] = s
	}
	for _, s := range u.Sessions {
		sv := SessionView{ID: s.ID, DNN: s.DNN, SNSSAI: s.SNSSAI.String(), UserPlane: s.UserPlane, SMContextRef: s.SMContextRef}
		if m, ok := atSMF[s.ID]; ok {
			delete(atSMF, s.ID)
			addSMF(&sv, m)
		}
		v.Sessions = append(v.Sessions, sv)
	}
	// Sessions the SMF holds and the AMF does not (yet, or any more: an
	// establishment or a release in flight between them).
	for _, s := range sessions {
		if m, ok := atSMF[s.ID]; ok {
			sv := SessionView{ID: m.ID, DNN: m.DNN, SNSSAI: m.SNSSAI.String(), SMContextRef: m.Ref}
			addSMF(&sv, m)
			v.Sessions = append(v.Sessions, sv)
		}
	}
	return v
}

func addSMF(sv *SessionView, m smf.SessionInfo) {
	if m.UEIP.IsValid() {
		sv.UEIP = m.UEIP.String()
	}
	sv.State, sv.UpCnxState, sv.UPF = m.State, m.UpCnx, m.UPF
	if m.UPFN3.IsValid() {
		sv.UPFN3 = m.UPFN3.String()
	}
}

func legView(l *amf.RANLeg) *RANLegView {
	if l == nil {
		return nil
	}
	return &RANLegView{GNB: gnbString(l.GNB), GNBAddress: l.GNBAddress, AMFUENGAPID: l.AMFUENGAPID,
		RANUENGAPID: l.RANUENGAPID, State: l.State, TAI: l.TAI.String(),
		Cell: fmt.Sprintf("%s-%09x", l.Cell.PLMN, l.Cell.CellID)}
}

// gnbString writes a Global gNB ID as PLMN-ID/bits: the ID in hex with
// the digits its bit length needs, and the length, which is part of the
// ID (TS 38.413 §9.3.1.6: 22 to 32 bits).
func gnbString(g ngap.GlobalGNBID) string {
	if g.BitLen == 0 {
		return "" // before NG Setup
	}
	return fmt.Sprintf("%s-%0*x/%d", g.PLMN, (int(g.BitLen)+3)/4, g.GNBID, g.BitLen)
}

// Problem is the body of an error answer (RFC 9457 problem details).
type Problem struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	encodeJSON(w, Problem{Status: status, Detail: detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	encodeJSON(w, v)
}

// encodeJSON writes v without HTML escapes (no browser reads this).
func encodeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// OperatorServer serves the operator API on a unix socket.
type OperatorServer struct {
	http *httpserve.Server
	lock *os.File // path's lock file, held while serving
	path string
}

// maxSocketPath is the longest path a unix socket may have on Linux
// (sun_path is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// ErrOperatorSocketInUse is ServeOperator's failure when another process
// serves the socket.
var ErrOperatorSocketInUse = errors.New("served by another process")

// StartOperator serves h on the operator socket of cfg (OperatorSocket).
// It fails only where another process serves that socket (another core on
// the same store): two cores answering for one store would be worse than
// none. Any other failure (a directory it may not create, such as a
// read-only $HOME beside a PostgreSQL store; a path too long for a socket)
// costs the operator API, not the core: it is logged, and StartOperator
// returns nil, nil.
func StartOperator(cfg config.Config, h http.Handler, log *slog.Logger) (*OperatorServer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := ServeOperator(OperatorSocket(cfg), h, log)
	if errors.Is(err, ErrOperatorSocketInUse) {
		return nil, err
	}
	if err != nil {
		log.Warn("running without the operator API: tern ue cannot reach this process (set operator.socket to a place it may create)", "err", err)
		return nil, nil
	}
	return s, nil
}

// ServeOperator serves h on a unix socket at path until Close, to this
// user and root only. A socket left there by a process that is gone is
// replaced; one that another process serves is not (ErrOperatorSocketInUse).
//
// Whoever serves path holds an exclusive flock on path.lock for as long as
// it does: the check for a live server, the removal of a stale socket and
// the bind are one step, so two servers starting at once cannot both
// remove the stale socket and bind (one of them unlinking the other's live
// socket, and later, on its way out, the path the other serves).
func ServeOperator(path string, h http.Handler, log *slog.Logger) (*OperatorServer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("core: operator socket %s: the path is longer than a unix socket's %d bytes (set operator.socket)", path, maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("core: operator socket: %w", err)
	}
	lock, err := lockSocket(path)
	if err != nil {
		return nil, err
	}
	ln, err := listenSocket(path, log)
	if err != nil {
		unlockSocket(path, lock)
		return nil, err
	}
	s := &OperatorServer{http: httpserve.Start(ln, h, log, "operator API"), lock: lock, path: path}
	log.Info("operator API listening", "socket", path, "paths", "/ues /ues/{supi}")
	return s, nil
}

// lockSocket takes the exclusive flock on path.lock that the server of
// path holds (ServeOperator), or fails with ErrOperatorSocketInUse.
func lockSocket(path string) (*os.File, error) {
	name := path + ".lock"
	for range 10 {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("core: operator socket: %w", err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("core: operator socket %s is %w (a core already running on this store?); "+
				"stop it, or give this one another store (--store, store.path) or operator.socket", path, ErrOperatorSocketInUse)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("core: operator socket: locking %s: %w", name, err)
		}
		// The server before may have removed the lock file on its way
		// out (unlockSocket) after this opened it: lock the one there now.
		held, err := f.Stat()
		if now, serr := os.Stat(name); err == nil && serr == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("core: operator socket: %s keeps being replaced", name)
}

// unlockSocket removes the lock file, then releases the lock: removed
// while held, it is never taken from under a server.
func unlockSocket(path string, lock *os.File) {
	os.Remove(path + ".lock")
	lock.Close()
}

// listenSocket binds the socket at path, replacing a stale one (the caller
// holds the lock, so nobody serves it), refusing anything else in the way.
// Connections from other users are refused (peerCheck): the socket's mode,
// 0600, is set only after the bind.
func listenSocket(path string, log *slog.Logger) (net.Listener, error) {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&os.ModeSocket == 0:
		return nil, fmt.Errorf("core: operator socket %s: a file that is not a socket is in the way", path)
	case err == nil:
		// A core that was killed left it behind.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("core: operator socket: removing the stale %s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("core: operator socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("core: operator socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("core: operator socket: %w", err)
	}
	return peerCheck{ln, log}, nil
}

// peerCheck accepts connections from processes of this user (the
// effective uid) and root only (SO_PEERCRED), whatever the socket's file
// mode, which has the umask's between bind and chmod.
type peerCheck struct {
	*net.UnixListener
	log *slog.Logger
}

func (l peerCheck) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := sockowner.PeerUID(c)
		if err == nil && (uid == uint32(os.Geteuid()) || uid == 0) {
			return c, nil
		}
		l.log.Warn("operator API: refused a connection from another user", "uid", uid, "err", err)
		c.Close()
	}
}

// Path is the socket's path.
func (s *OperatorServer) Path() string { return s.path }

// Close stops the server and removes the socket, then its lock. A nil
// server (StartOperator ran without one) has nothing to close.
func (s *OperatorServer) Close() error {
	if s == nil {
		return nil
	}
	err := s.http.Close()
	unlockSocket(s.path, s.lock)
	return err
}
