// Package engine is tern's replicated store for cross-node resiliency state
// (issue 36 §2): the replay log of messages a front end stamped, and the
// checkpoints a remote replica restores from. It wraps NATS JetStream, a
// widely used replicated engine, so that no consensus, log or replication
// protocol is tern's own; callers (the replica, the front ends) see only
// this package's types, never nats.
//
// Everything lives in one JetStream stream, because JetStream evaluates its
// consistency checks (expected last sequence of a subject) within one stream
// only, and fencing needs the epoch and the data it fences side by side. Per
// unit u (an AMF, an SMF, a front end):
//
//	tern.u.epoch      one message per Acquire; the stream sequence of the
//	                  last one is the unit's epoch (monotonic, never reused)
//	tern.u.log        the replay log; stream sequences are L25GC's counters
//	tern.u.ck.<key>   checkpoints; the stream sequence of the last message
//	                  of a key is its revision (JetStream KV's model)
//	tern.u.fence      a marker that commits with each checkpoint (below)
//
// Fencing (issue 36 §5) is checked by the engine, not the client: an Append
// carries Nats-Expected-Last-Subject-Sequence = the writer's epoch on
// subject tern.u.epoch, so once another writer's Acquire has published a
// newer epoch the engine refuses it (ErrFenced). A checkpoint is an atomic
// batch of two messages: the checkpoint with the compare-and-set on its own
// revision, and the fence marker with the epoch check; JetStream commits
// both or neither.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors the caller acts on. Others wrap the engine's error with context.
var (
	// ErrUnreachable: the engine did not answer at start.
	ErrUnreachable = errors.New("engine: unreachable")
	// ErrFenced: a newer epoch of the unit exists; this writer must stop.
	ErrFenced = errors.New("engine: fenced by a newer epoch")
	// ErrRevision: the checkpoint's revision is not the expected one.
	ErrRevision = errors.New("engine: checkpoint revision mismatch")
	// ErrNotFound: no such checkpoint.
	ErrNotFound = errors.New("engine: not found")
	// ErrCorrupt: an entry failed its checksum or is truncated.
	ErrCorrupt = errors.New("engine: corrupt entry")
	// ErrLogFull: the log reached its byte limit; nothing is dropped to
	// make room (an entry no checkpoint covers yet would be lost), the
	// append is refused and the caller decides.
	ErrLogFull = errors.New("engine: log full")
)

// StreamName is the JetStream stream that holds every unit's state.
const StreamName = "TERN"

// subjectRoot prefixes every subject of the stream.
const subjectRoot = "tern"

// Config is what the stream is created with.
type Config struct {
	// Replicas is the stream's replication factor (1 for one node, 3 for
	// a cluster of three: an append is acknowledged once a majority holds
	// it).
	Replicas int
	// MaxBytes bounds the stream (0: unlimited). A full log refuses
	// appends with ErrLogFull instead of dropping old entries.
	MaxBytes int64
	// MaxAge drops log entries older than this (0: never). Epochs and
	// checkpoints are exempt (they carry a TTL of "never"); it should be
	// well above the checkpoint interval, or entries no checkpoint covers
	// yet expire.
	MaxAge time.Duration
	// Timeout bounds start-up (connecting, creating the stream) when the
	// caller's context has no deadline. Default 5 s.
	Timeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	return c
}

// Stats counts what the engine did, for the caller to export as metrics.
type Stats struct {
	Appends     uint64 // log entries acknowledged
	Checkpoints uint64 // checkpoints acknowledged
	Failures    uint64 // operations that failed (any reason, fenced included)
	Fenced      uint64 // writes refused for a stale epoch
	Corrupt     uint64 // entries rejected by their checksum
	Retries     uint64 // writes retried after a replicated stream's "check in process" answer
}

type counters struct {
	appends, checkpoints, failures, fenced, corrupt, retries atomic.Uint64
}

// Engine is a connection to the engine, and the embedded server when it
// started one. Its methods are safe for concurrent use.
type Engine struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	srv    *server.Server // nil when connected to an external cluster
	n      counters
}

// Connect connects to an external engine (a NATS cluster with JetStream)
// and creates or updates the stream. An engine that does not answer within
// ctx (or cfg.Timeout) is ErrUnreachable; once connected, the client
// reconnects forever and each operation is bounded by its own ctx.
func Connect(ctx context.Context, urls []string, cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	nc, err := nats.Connect(strings.Join(urls, ","), clientOptions(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, strings.Join(urls, ","), err)
	}
	e, err := open(ctx, nc, cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return e, nil
}

func clientOptions(cfg Config) []nats.Option {
	return []nats.Option{
		nats.Name("tern-resil"),
		nats.Timeout(cfg.Timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20 * time.Millisecond),
		// Publishes made while disconnected wait in this buffer for the
		// reconnect; their operation's ctx bounds how long.
		nats.ReconnectBufSize(8 << 20),
	}
}

func open(ctx context.Context, nc *nats.Conn, cfg Config) (*Engine, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("engine: jetstream: %w", err)
	}
	sc := jetstream.StreamConfig{
		Name:        StreamName,
		Subjects:    []string{subjectRoot + ".>"},
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		MaxBytes:    cfg.MaxBytes,
		MaxAge:      cfg.MaxAge,
		Discard:     jetstream.DiscardNew,
		AllowMsgTTL: true,
		// Checkpoints commit with their fence marker as one batch.
		AllowAtomicPublish: true,
		// Epochs and checkpoints roll up: a subject keeps its last.
		AllowRollup: true,
	}
	if sc.MaxBytes == 0 {
		sc.MaxBytes = -1
	}
	// A cluster elects its meta leader some time after its members start:
	// until then the stream API does not answer, so try until ctx ends.
	var last error
	for {
		// A request made before there is a leader is never answered:
		// each try gets its own deadline.
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := js.CreateOrUpdateStream(tctx, sc)
		cancel()
		if err == nil {
			return &Engine{nc: nc, js: js, stream: st}, nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: creating stream %s: %v", ErrUnreachable, StreamName, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close closes the connection, and shuts the embedded server down (waiting
// for it) when there is one.
func (e *Engine) Close() {
	e.nc.Close()
	if e.srv != nil {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	}
}

// Stats returns the counters so far.
func (e *Engine) Stats() Stats {
	return Stats{
		Appends:     e.n.appends.Load(),
		Checkpoints: e.n.checkpoints.Load(),
		Failures:    e.n.failures.Load(),
		Fenced:      e.n.fenced.Load(),
		Corrupt:     e.n.corrupt.Load(),
		Retries:     e.n.retries.Load(),
	}
}

// ClientURL is where the embedded server listens for clients ("" when it
// is in-process only or there is no embedded server).
func (e *Engine) ClientURL() string {
	if e.srv == nil || e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// validUnit reports whether s can name a unit: one subject token (a dot
// would let unit "a.ck.b" alias unit "a"'s checkpoint "b.log").
func validUnit(s string) bool {
	return validKey(s) && !strings.Contains(s, ".")
}

// validKey reports whether s can be a checkpoint key: one or more subject
// tokens without wildcards or white space.
func validKey(s string) bool {
	if s == "" || strings.ContainsAny(s, "*> \t\r\n") {
		return false
	}
	for t := range strings.SplitSeq(s, ".") {
		if t == "" {
			return false
		}
	}
	return true
}

func epochSubject(unit string) string { return subjectRoot + "." + unit + ".epoch" }
func logSubject(unit string) string   { return subjectRoot + "." + unit + ".log" }
func fenceSubject(unit string) string { return subjectRoot + "." + unit + ".fence" }
func checkpointSubject(unit, key string) string {
	return subjectRoot + "." + unit + ".ck." + key
}
