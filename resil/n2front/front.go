package n2front

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tern5g/tern/internal/serial"
	"github.com/tern5g/tern/internal/sockowner"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// Defaults applied to a zero Config.
const (
	// DefaultMaxLogMessages bounds the replay log's messages: with units
	// that acknowledge within a step, it holds what is in flight; while
	// no unit is active, what the gNBs sent meanwhile.
	DefaultMaxLogMessages = 1 << 16
	// DefaultMaxLogBytes bounds the replay log's bytes.
	DefaultMaxLogBytes = 64 << 20
	// DefaultMaxAssociations bounds the gNB associations served.
	DefaultMaxAssociations = 4096
	// DefaultWriteTimeout is how long a unit may leave its link unread
	// before the front drops the link (the unit is then taken as failed).
	DefaultWriteTimeout = time.Second
	// DefaultHelloTimeout bounds the wait for a unit's hello.
	DefaultHelloTimeout = time.Second
	// DefaultRetireWait bounds how long a unit with a higher epoch waits
	// for the link of the unit it replaces to end (awaitRetired).
	DefaultRetireWait = 200 * time.Millisecond
)

// Config configures a Front. Only UnitPath is required.
type Config struct {
	// UnitPath is the Unix socket (SOCK_SEQPACKET) the units dial.
	UnitPath string
	// MaxLogMessages and MaxLogBytes bound the replay log (defaults
	// DefaultMaxLogMessages, DefaultMaxLogBytes). An uplink message that
	// does not fit is dropped and counted (Stats.LogFull).
	MaxLogMessages int
	MaxLogBytes    int
	// MaxAssociations bounds the gNB associations (default
	// DefaultMaxAssociations); one more is shut down at once and counted.
	MaxAssociations int
	// WriteTimeout, HelloTimeout and RetireWait: see the defaults.
	WriteTimeout time.Duration
	HelloTimeout time.Duration
	RetireWait   time.Duration
	// Logger receives the front's events; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxLogMessages <= 0 {
		c.MaxLogMessages = DefaultMaxLogMessages
	}
	if c.MaxLogBytes <= 0 {
		c.MaxLogBytes = DefaultMaxLogBytes
	}
	if c.MaxAssociations <= 0 {
		c.MaxAssociations = DefaultMaxAssociations
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.HelloTimeout <= 0 {
		c.HelloTimeout = DefaultHelloTimeout
	}
	if c.RetireWait <= 0 {
		c.RetireWait = DefaultRetireWait
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Stats are the front's counters, for metrics.
type Stats struct {
	Uplink      uint64 // messages received from gNBs
	Downlink    uint64 // messages sent to gNBs
	Logged      uint64 // messages in the replay log now
	LoggedBytes uint64 // their bytes
	Acked       uint64 // messages acknowledged out of the log (an answered NG Setup or RAN Configuration Update request included)
	Replayed    uint64 // messages sent again, to a unit after the one they were sent to
	LogFull     uint64 // uplink messages dropped: the replay log was full
	// DroppedWithAssociation counts logged messages dropped because their
	// association ended before a unit acknowledged them.
	DroppedWithAssociation uint64
	// ConfigUpdatesDropped counts acknowledged RAN Configuration Updates
	// the front forgot, beyond the last maxConfigUpdates of an
	// association: a resumed unit does not see them.
	ConfigUpdatesDropped uint64
	UnitsWelcomed        uint64 // unit links accepted
	UnitsRefused         uint64 // unit links refused: epoch not above the highest seen, bad hello, other user
	MalformedFrames      uint64 // frames from units that ended their link
	FencedFrames         uint64 // frames from a replaced unit, ignored
	UnknownAssociation   uint64 // downlink frames for an association that is gone
	SwallowedAnswers     uint64 // NG Setup / RAN Configuration Update answers no request waited for (a resumed unit's)
	SendErrors           uint64 // downlink messages the gNB's association refused
	Associations         int    // gNB associations now
	AssociationsRefused  uint64 // over MaxAssociations
	Epoch                uint64 // highest unit epoch seen
	UnitActive           bool   // a unit is connected
}

type counters struct {
	uplink, downlink, acked, replayed, logFull, droppedWithAssoc,
	configUpdatesDropped, welcomed, refused, malformed, fenced,
	unknownAssoc, swallowed, sendErrors, assocsRefused atomic.Uint64
}

// Front serves gNB associations and one active unit at a time (see the
// package comment).
type Front struct {
	cfg   Config
	log   *slog.Logger
	group *serial.Group
	units *net.UnixListener
	stats counters

	// sendMu orders downlink sends against a change of the active unit:
	// a send holds it shared, activate exclusively, so that once a unit
	// is replaced no message it sent reaches a gNB.
	sendMu sync.RWMutex

	mu        sync.Mutex
	assocs    map[uint32]*assoc
	nextAssoc uint32
	nextStamp uint64
	rlog      replayLog
	logFull   bool   // the last uplink message did not fit (for one log line per episode)
	epoch     uint64 // highest seen
	active    *unitLink
	links     map[*unitLink]struct{}
	listeners []sctp.Listener
}

// assoc is one gNB association. Its fields other than id and conn are
// under Front.mu.
type assoc struct {
	id   uint32
	conn sctp.Conn

	ended bool
	// setup is the NG Setup Request the last successful NG Setup
	// Response answered, updates the RAN Configuration Updates
	// acknowledged since (oldest first): what a unit needs to take the
	// association over (TS 38.413 §8.7.1, §8.7.2).
	setup   []byte
	updates [][]byte
	// The requests waiting for their answer (the gNB sends one of each
	// at a time, TS 38.413 §8.7.1.2, §8.7.2.2).
	pendingSetup, pendingUpdate request
}

type request struct {
	data  []byte
	stamp uint64
}

// unitLink is the front's end of one unit's link.
type unitLink struct {
	conn  *net.UnixConn
	epoch uint64
	out   []outItem // under Front.mu: frames for the writer, in order
	wake  chan struct{}
	done  chan struct{} // closed once the link is finished
}

type outItem struct {
	typ  uint8
	e    entry  // frameUplink
	id   uint32 // frameClosed
	open *frame // frameOpen
}

// queue hands it to l's writer; the caller holds Front.mu.
func (l *unitLink) queue(it outItem) {
	l.out = append(l.out, it)
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// New listens for units at cfg.UnitPath; gNB associations come through
// Serve or ServeConn. A socket left at the path by a front that died is
// replaced; one a live front serves is not.
func New(cfg Config) (*Front, error) {
	cfg = cfg.withDefaults()
	if cfg.UnitPath == "" {
		return nil, errors.New("n2front: no unit socket path")
	}
	ln, err := listenUnits(cfg.UnitPath)
	if err != nil {
		return nil, err
	}
	f := &Front{
		cfg:    cfg,
		log:    cfg.Logger,
		group:  serial.NewGroup(),
		units:  ln,
		assocs: make(map[uint32]*assoc),
		links:  make(map[*unitLink]struct{}),
	}
	f.group.Go(f.acceptUnits)
	return f, nil
}

// listenUnits binds the unit socket, replacing a stale one, and makes it
// its owner's only (Front also checks each unit's uid: the mode is set
// after the bind).
func listenUnits(path string) (*net.UnixListener, error) {
	addr := &net.UnixAddr{Name: path, Net: "unixpacket"}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("n2front: %s: a file that is not a socket is in the way", path)
		}
		c, err := net.DialUnix("unixpacket", nil, addr)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("n2front: %s: another front serves it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("n2front: removing the stale %s: %w", path, err)
		}
	}
	ln, err := net.ListenUnix("unixpacket", addr)
	if err != nil {
		return nil, fmt.Errorf("n2front: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("n2front: %w", err)
	}
	return ln, nil
}

// Serve accepts gNB associations from l in the background until Close;
// the front owns l and closes it in Close.
func (f *Front) Serve(l sctp.Listener) error {
	f.mu.Lock()
	f.listeners = append(f.listeners, l)
	f.mu.Unlock()
	if !f.group.Go(func() { f.acceptGNBs(l) }) {
		l.Close()
		return errors.New("n2front: closed")
	}
	return nil
}

func (f *Front) acceptGNBs(l sctp.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !f.group.Closed() {
				f.log.Warn("N2 accept stopped", "err", err)
			}
			return
		}
		f.ServeConn(c)
	}
}

// ServeConn serves one established gNB association; the front owns c.
func (f *Front) ServeConn(c sctp.Conn) {
	f.mu.Lock()
	if len(f.assocs) >= f.cfg.MaxAssociations {
		f.mu.Unlock()
		f.stats.assocsRefused.Add(1)
		f.log.Warn("gNB association refused: too many", "gnb", c.RemoteAddr().String(), "max", f.cfg.MaxAssociations)
		if !f.group.Go(func() { c.Close() }) {
			c.Close()
		}
		return
	}
	for f.nextAssoc++; f.nextAssoc == 0 || f.assocs[f.nextAssoc] != nil; f.nextAssoc++ {
	}
	a := &assoc{id: f.nextAssoc, conn: c}
	f.assocs[a.id] = a
	if u := f.active; u != nil {
		u.queue(outItem{typ: frameOpen, open: a.openFrame()})
	}
	f.mu.Unlock()
	if !f.group.Go(func() { f.serveAssoc(a) }) {
		f.mu.Lock()
		delete(f.assocs, a.id)
		f.mu.Unlock()
		c.Close()
	}
}

// openFrame describes a to a unit; the caller holds Front.mu.
func (a *assoc) openFrame() *frame {
	fr := &frame{typ: frameOpen, assoc: a.id, streams: a.conn.OutboundStreams(),
		resume: a.setup != nil, setup: a.setup, updates: a.updates}
	fr.local = addrOf(a.conn.LocalAddr())
	fr.remote = addrOf(a.conn.RemoteAddr())
	return fr
}

func addrOf(a net.Addr) sctp.Addr {
	if sa, ok := a.(*sctp.Addr); ok && sa != nil {
		return *sa
	}
	return sctp.Addr{}
}

func (f *Front) serveAssoc(a *assoc) {
	err := sctp.Serve(a.conn, func(m sctp.Message) { f.uplink(a, m) })
	f.mu.Lock()
	a.ended = true
	delete(f.assocs, a.id)
	dropped := f.rlog.dropAssoc(a.id)
	if u := f.active; u != nil {
		u.queue(outItem{typ: frameClosed, id: a.id})
	}
	f.mu.Unlock()
	f.stats.droppedWithAssoc.Add(uint64(dropped))
	a.conn.Close()
	if !f.group.Closed() {
		f.log.Info("gNB association ended", "gnb", a.conn.RemoteAddr().String(), "err", err, "unacknowledged", dropped)
	}
}

// isNGAP: TS 38.412 §7 gives NGAP PPID 60; tern's AMF takes 0 as NGAP too.
func isNGAP(ppid uint32) bool { return ppid == ngap.PPID || ppid == 0 }

// uplink stamps, logs and forwards one message of a gNB. It may run on
// the association's packet goroutine (sctp.Serve): it never blocks.
func (f *Front) uplink(a *assoc, m sctp.Message) {
	f.stats.uplink.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.ended {
		return
	}
	if len(m.Data) > maxMessage || f.rlog.live >= f.cfg.MaxLogMessages || f.rlog.bytes+len(m.Data) > f.cfg.MaxLogBytes {
		// Refuse rather than drop the oldest: a message refused here is
		// lost like a packet on the radio (the UE's NAS timers or the
		// gNB's procedure timers send it again), while dropping a logged
		// one would let a replica miss a step the active unit took.
		f.stats.logFull.Add(1)
		if !f.logFull {
			f.logFull = true
			f.log.Warn("replay log full: dropping gNB messages until units acknowledge",
				"messages", f.rlog.live, "bytes", f.rlog.bytes, "unit", f.active != nil)
		}
		return
	}
	if f.logFull {
		f.logFull = false
		f.log.Info("replay log has room again", "messages", f.rlog.live)
	}
	f.nextStamp++
	e := entry{stamp: f.nextStamp, assoc: a.id, stream: m.Stream, ppid: m.PPID, data: m.Data}
	if isNGAP(m.PPID) {
		if proc, typ, ok := ngap.Header(m.Data); ok && typ == ngap.InitiatingMessage {
			switch proc {
			case ngap.ProcNGSetup:
				a.pendingSetup = request{m.Data, e.stamp}
			case ngap.ProcRANConfigurationUpdate:
				a.pendingUpdate = request{m.Data, e.stamp}
			}
		}
	}
	if u := f.active; u != nil {
		e.sent = true
		u.queue(outItem{typ: frameUplink, e: e})
	}
	f.rlog.push(e)
}

// acceptUnits accepts unit links until Close.
func (f *Front) acceptUnits() {
	for {
		c, err := f.units.AcceptUnix()
		if err != nil {
			if !f.group.Closed() {
				f.log.Error("unit link accept stopped", "err", err)
			}
			return
		}
		if !f.group.Go(func() { f.serveUnit(c) }) {
			c.Close()
			return
		}
	}
}

// serveUnit runs one unit link: hello, activation, then the unit's frames
// until the link ends.
func (f *Front) serveUnit(c *net.UnixConn) {
	if uid, err := sockowner.PeerUID(c); err != nil || (uid != uint32(os.Geteuid()) && uid != 0) {
		f.stats.refused.Add(1)
		f.log.Warn("unit link refused: another user", "uid", uid, "err", err)
		c.Close()
		return
	}
	buf := make([]byte, maxFrame)
	var fr frame
	c.SetReadDeadline(time.Now().Add(f.cfg.HelloTimeout))
	err := readFrame(c, buf, &fr)
	if err == nil && fr.typ != frameHello {
		err = fmt.Errorf("%w: first frame of type %d", errMalformed, fr.typ)
	}
	if err != nil {
		f.stats.refused.Add(1)
		if errors.Is(err, errMalformed) {
			f.stats.malformed.Add(1)
		}
		f.log.Warn("unit link refused: no hello", "err", err)
		f.refuse(c, refuseBadHello)
		return
	}
	c.SetReadDeadline(time.Time{})
	f.awaitRetired(fr.epoch)
	l := &unitLink{conn: c, epoch: fr.epoch, wake: make(chan struct{}, 1), done: make(chan struct{})}
	old, ok := f.activate(l)
	if !ok {
		f.refuse(c, refuseStaleEpoch)
		return
	}
	if old != nil {
		old.conn.Close() // its reader finishes it
	}
	if !f.group.Go(func() { f.writeUnit(l) }) {
		f.finishUnit(l, errors.New("closing"))
		return
	}
	for {
		if err = readFrame(c, buf, &fr); err != nil {
			break
		}
		switch fr.typ {
		case frameAck:
			f.ack(l, fr.stamps)
		case frameDownlink:
			f.downlink(l, &fr)
		case frameClose:
			f.closeAssoc(l, fr.assoc)
		default:
			err = fmt.Errorf("%w: type %d from a unit", errMalformed, fr.typ)
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, errMalformed) {
		f.stats.malformed.Add(1)
	}
	f.finishUnit(l, err)
}

// awaitRetired lets the active unit's link, when a unit with a higher epoch
// comes to replace it, end first: a unit that died (the usual reason its
// successor is here) left its last frames in its socket, before the end of
// file, and its acknowledgements among them are of steps its records hold,
// which the successor restored. Taking them before the successor is
// active keeps those messages out of the replay. A unit still alive (its
// link does not end within Config.RetireWait) is fenced as it is.
func (f *Front) awaitRetired(epoch uint64) {
	f.mu.Lock()
	prev := f.active
	f.mu.Unlock()
	if prev == nil || epoch <= prev.epoch {
		return
	}
	select {
	case <-prev.done:
	case <-time.After(f.cfg.RetireWait):
	}
}

// refuse tells a unit why, as far as it listens, and hangs up.
func (f *Front) refuse(c *net.UnixConn, reason uint8) {
	f.mu.Lock()
	epoch := f.epoch
	f.mu.Unlock()
	c.SetWriteDeadline(time.Now().Add(f.cfg.WriteTimeout))
	c.Write(appendRefuse(nil, reason, epoch))
	// Closing a Unix socket with frames unread resets the peer's end
	// before it reads the refusal: hang up our side, discard what the
	// unit sent (nothing of it is served) until it hangs up too.
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(f.cfg.HelloTimeout))
	buf := make([]byte, 512)
	for {
		if _, _, _, _, err := c.ReadMsgUnix(buf, nil); err != nil {
			break
		}
	}
	c.Close()
}

// readFrame reads and decodes one record; fr aliases buf.
func readFrame(c *net.UnixConn, buf []byte, fr *frame) error {
	n, _, flags, _, err := c.ReadMsgUnix(buf, nil)
	if err != nil {
		return err
	}
	if n == 0 {
		return net.ErrClosed // SOCK_SEQPACKET: the peer hung up (or an empty record, which no frame is)
	}
	if flags&syscall.MSG_TRUNC != 0 {
		return fmt.Errorf("%w: record above %d bytes", errMalformed, len(buf))
	}
	return decodeFrame(buf[:n], fr)
}

// activate makes l the active unit if its epoch is above every epoch seen
// (fencing), queues its welcome, an open per association and the replay
// log, and returns the unit it replaces.
func (f *Front) activate(l *unitLink) (old *unitLink, ok bool) {
	f.sendMu.Lock()
	defer f.sendMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.epoch <= f.epoch {
		f.stats.refused.Add(1)
		f.log.Warn("unit refused: epoch not above the highest seen (fenced)", "epoch", l.epoch, "highest", f.epoch)
		return nil, false
	}
	f.epoch = l.epoch
	old, f.active = f.active, l
	f.links[l] = struct{}{}
	f.stats.welcomed.Add(1)
	l.queue(outItem{typ: frameWelcome})
	ids := make([]uint32, 0, len(f.assocs))
	for id := range f.assocs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		l.queue(outItem{typ: frameOpen, open: f.assocs[id].openFrame()})
	}
	// The marker: the unit now knows every association it will get
	// resumed, and loses the restored connections of the others.
	l.queue(outItem{typ: frameOpened})
	replayed := 0
	f.rlog.each(func(e *entry) {
		if e.sent {
			replayed++
		}
		e.sent = true
		l.queue(outItem{typ: frameUplink, e: *e})
	})
	f.stats.replayed.Add(uint64(replayed))
	f.log.Info("unit active", "epoch", l.epoch, "replaced", old != nil,
		"associations", len(ids), "replaying", f.rlog.live, "sent before", replayed)
	return old, true
}

// finishUnit ends l: when it was the active unit, the front goes on
// without one (logging) until a unit with a higher epoch comes.
func (f *Front) finishUnit(l *unitLink, err error) {
	f.mu.Lock()
	wasActive := f.active == l
	if wasActive {
		f.active = nil
	}
	_, known := f.links[l]
	delete(f.links, l)
	f.mu.Unlock()
	l.conn.Close()
	if known {
		close(l.done)
	}
	if wasActive && !f.group.Closed() {
		f.log.Warn("unit link ended: holding the gNB associations and logging until a unit with a higher epoch comes",
			"epoch", l.epoch, "err", err)
	}
}

// writeUnit writes l's queued frames in order until the link ends.
func (f *Front) writeUnit(l *unitLink) {
	var buf []byte
	var batch []outItem
	for {
		select {
		case <-l.wake:
		case <-l.done:
			return
		}
		f.mu.Lock()
		batch, l.out = l.out, batch[:0]
		f.mu.Unlock()
		for i := range batch {
			it := &batch[i]
			switch it.typ {
			case frameWelcome:
				buf = appendWelcome(buf[:0], l.epoch)
			case frameOpen:
				buf = appendOpen(buf[:0], it.open)
			case frameUplink:
				buf = appendUplink(buf[:0], it.e.assoc, it.e.stamp, it.e.stream, it.e.ppid, it.e.data)
			case frameClosed:
				buf = appendAssoc(buf[:0], frameClosed, it.id)
			case frameOpened:
				buf = appendOpened(buf[:0])
			}
			*it = outItem{}
			l.conn.SetWriteDeadline(time.Now().Add(f.cfg.WriteTimeout))
			if _, err := l.conn.Write(buf); err != nil {
				// The reader sees the closed socket and finishes the link.
				f.log.Warn("unit link write failed", "epoch", l.epoch, "err", err)
				l.conn.Close()
				return
			}
		}
	}
}

// ack drops acknowledged stamps from the log. A replaced unit's acks are
// ignored: what counts is what its successor restored.
func (f *Front) ack(l *unitLink, stamps []uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active != l {
		f.stats.fenced.Add(1)
		return
	}
	n := 0
	for _, s := range stamps {
		if f.rlog.ack(s) {
			n++
		}
	}
	f.stats.acked.Add(uint64(n))
}

// downlink sends a unit's message to its gNB. NG Setup and RAN
// Configuration Update answers are watched: a successful one makes its
// request part of what a later unit resumes the association with, and
// takes the request out of the log (the resume carries it); an answer no
// request waits for is a resumed unit answering the resume and does not
// go to the gNB, which asked nothing.
func (f *Front) downlink(l *unitLink, fr *frame) {
	f.sendMu.RLock()
	defer f.sendMu.RUnlock()
	f.mu.Lock()
	if f.active != l {
		f.mu.Unlock()
		f.stats.fenced.Add(1)
		return
	}
	a := f.assocs[fr.assoc]
	if a == nil || a.ended {
		f.mu.Unlock()
		f.stats.unknownAssoc.Add(1)
		return
	}
	if isNGAP(fr.ppid) {
		if proc, typ, ok := ngap.Header(fr.data); ok && typ != ngap.InitiatingMessage && !f.answer(a, proc, typ) {
			f.mu.Unlock()
			f.stats.swallowed.Add(1)
			return
		}
	}
	f.mu.Unlock()
	if err := a.conn.Send(fr.stream, fr.ppid, fr.data); err != nil {
		f.stats.sendErrors.Add(1)
		f.log.Debug("downlink send failed", "gnb", a.conn.RemoteAddr().String(), "err", err)
		return
	}
	f.stats.downlink.Add(1)
}

// answer notes an answer of procedure proc on a and reports whether a
// request waited for it. The caller holds Front.mu.
func (f *Front) answer(a *assoc, proc int64, typ ngap.MessageType) bool {
	var req *request
	switch proc {
	case ngap.ProcNGSetup:
		req = &a.pendingSetup
	case ngap.ProcRANConfigurationUpdate:
		req = &a.pendingUpdate
	default:
		return true
	}
	if req.data == nil {
		return false
	}
	if typ == ngap.SuccessfulOutcome {
		switch proc {
		case ngap.ProcNGSetup:
			// TS 38.413 §8.7.1.2: a new NG Setup replaces the
			// association's configuration.
			a.setup, a.updates = req.data, nil
		case ngap.ProcRANConfigurationUpdate:
			if a.setup != nil {
				if len(a.updates) == maxConfigUpdates {
					a.updates = slices.Delete(a.updates, 0, 1)
					f.stats.configUpdatesDropped.Add(1)
				}
				a.updates = append(a.updates, req.data)
			}
		}
	}
	if f.rlog.ack(req.stamp) {
		f.stats.acked.Add(1)
	}
	*req = request{}
	return true
}

// closeAssoc shuts a gNB association down at the unit's request.
func (f *Front) closeAssoc(l *unitLink, id uint32) {
	f.mu.Lock()
	a := f.assocs[id]
	active := f.active == l
	f.mu.Unlock()
	switch {
	case !active:
		f.stats.fenced.Add(1)
	case a == nil:
		f.stats.unknownAssoc.Add(1)
	default:
		// SHUTDOWN may wait for the gNB: not on the link's reader.
		if !f.group.Go(func() { a.conn.Close() }) {
			a.conn.Close()
		}
	}
}

// Stats returns the front's counters.
func (f *Front) Stats() Stats {
	f.mu.Lock()
	s := Stats{
		Logged:       uint64(f.rlog.live),
		LoggedBytes:  uint64(f.rlog.bytes),
		Associations: len(f.assocs),
		Epoch:        f.epoch,
		UnitActive:   f.active != nil,
	}
	f.mu.Unlock()
	c := &f.stats
	s.Uplink, s.Downlink, s.Acked, s.Replayed = c.uplink.Load(), c.downlink.Load(), c.acked.Load(), c.replayed.Load()
	s.LogFull, s.DroppedWithAssociation = c.logFull.Load(), c.droppedWithAssoc.Load()
	s.ConfigUpdatesDropped = c.configUpdatesDropped.Load()
	s.UnitsWelcomed, s.UnitsRefused, s.MalformedFrames = c.welcomed.Load(), c.refused.Load(), c.malformed.Load()
	s.FencedFrames, s.UnknownAssociation, s.SwallowedAnswers = c.fenced.Load(), c.unknownAssoc.Load(), c.swallowed.Load()
	s.SendErrors, s.AssociationsRefused = c.sendErrors.Load(), c.assocsRefused.Load()
	return s
}

// UnitPath is the unit socket's path.
func (f *Front) UnitPath() string { return f.cfg.UnitPath }

// Close stops accepting, ends the unit links, shuts every gNB association
// down and waits for every goroutine the front started.
func (f *Front) Close() error {
	if f.group.Closed() {
		return nil
	}
	f.group.CloseFunc(func() {
		f.units.Close()
		f.mu.Lock()
		ls := f.listeners
		f.listeners = nil
		var conns []sctp.Conn
		for _, a := range f.assocs {
			conns = append(conns, a.conn)
		}
		var links []*unitLink
		for l := range f.links {
			links = append(links, l)
		}
		f.mu.Unlock()
		for _, l := range ls {
			l.Close()
		}
		for _, l := range links {
			l.conn.Close()
		}
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() { c.Close() })
		}
		wg.Wait()
	})
	return nil
}
