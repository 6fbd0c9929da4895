package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The legacy format, tern's store before the database engines: an
// append-only log, one record per line, "<CRC-32C of the JSON, 8 hex
// digits> <JSON>\n". Each record puts a subscriber (its SQN both SQN_HE and
// its reservation), deletes one, or logs an SQN reservation. Only reading
// is kept, for import.

var legacyCRC = crc32.MakeTable(crc32.Castagnoli)

// legacyEntry is one log line.
type legacyEntry struct {
	Op   string      `json:"op"` // put, del, sqn
	Sub  *Subscriber `json:"sub,omitempty"`
	SUPI string      `json:"supi,omitempty"`
	SQN  uint64      `json:"sqn,omitempty"`
}

var legacyLine = regexp.MustCompile(`^[0-9a-f]{8} \{`)

func decodeLegacyLine(b []byte) (legacyEntry, error) {
	var e legacyEntry
	sum, body, ok := bytes.Cut(b, []byte{' '})
	if !ok || len(sum) != 8 {
		return e, errors.New("missing checksum")
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil {
		return e, fmt.Errorf("checksum: %w", err)
	}
	if crc32.Checksum(body, legacyCRC) != uint32(want) {
		return e, errors.New("checksum mismatch")
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return e, fmt.Errorf("record: %w", err)
	}
	return e, nil
}

// ReadLegacy replays a legacy subscriber log and returns its subscribers
// sorted by SUPI. Each SQN is the last one logged: the exact SQN_HE after a
// clean shutdown, the reservation after a crash; either way no SQN issued
// exceeds it. A damaged last line is a torn append and is ignored, as the
// old store did; damage followed by valid lines is an error.
func ReadLegacy(r io.Reader) ([]Subscriber, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("store: reading legacy log: %w", err)
	}
	subs := map[string]*Subscriber{}
	for line := 1; len(data) > 0; line++ {
		text, rest, complete := bytes.Cut(data, []byte{'\n'})
		e, err := decodeLegacyLine(text)
		if err == nil {
			err = applyLegacy(subs, e)
		}
		if err != nil {
			if !complete || len(rest) == 0 {
				break // torn last line
			}
			return nil, fmt.Errorf("store: legacy log line %d: %w (the log is damaged before its end)", line, err)
		}
		if !complete {
			break // a valid line that lost only its newline
		}
		data = rest
	}
	out := make([]Subscriber, 0, len(subs))
	for _, s := range subs {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Subscriber) int { return strings.Compare(a.SUPI, b.SUPI) })
	return out, nil
}

func applyLegacy(subs map[string]*Subscriber, e legacyEntry) error {
	switch e.Op {
	case "put":
		if e.Sub == nil {
			return errors.New("put without subscriber")
		}
		if err := e.Sub.Validate(); err != nil {
			return err
		}
		c := e.Sub.Clone()
		subs[c.SUPI] = &c
	case "del":
		delete(subs, e.SUPI)
	case "sqn":
		s, ok := subs[e.SUPI]
		if !ok {
			return fmt.Errorf("sqn for unknown %s", e.SUPI)
		}
		if e.SQN > MaxSQN {
			return fmt.Errorf("sqn %d for %s exceeds 48 bits", e.SQN, e.SUPI)
		}
		s.SQN = e.SQN
	default:
		return fmt.Errorf("unknown op %q", e.Op)
	}
	return nil
}

// ReadLegacyFile is ReadLegacy of the file at path, which must be a legacy
// log.
func ReadLegacyFile(path string) ([]Subscriber, error) {
	kind, err := sniff(path)
	if err != nil {
		return nil, err
	}
	if kind != fileLegacy {
		return nil, fmt.Errorf("store: %s is not a legacy tern subscriber log", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	return ReadLegacy(f)
}

// fileKind is what a store path holds.
type fileKind int

const (
	fileMissing fileKind = iota
	fileEmpty            // SQLite makes a new database of it
	fileSQLite
	fileLegacy
	fileOther
)

// sniff tells what path holds by its first bytes.
func sniff(path string) (fileKind, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileMissing, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, fmt.Errorf("store: reading %s: %w", path, err)
	}
	head = head[:n]
	switch {
	case n == 0:
		return fileEmpty, nil
	case bytes.Equal(head, []byte("SQLite format 3\x00")):
		return fileSQLite, nil
	case legacyLine.Match(head):
		return fileLegacy, nil
	}
	return fileOther, nil
}

// convertLegacy replaces the legacy log at path with a SQLite store of the
// same subscribers, keeping the log as path.legacy, and returns that name.
// The new store is built beside it and renamed over it, so a crash leaves
// either the log or the complete store at path. Processes opening the same
// log at once take turns on a lock on it; the later ones find it replaced.
func convertLegacy(path string, opts Options) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	defer f.Close() // releases the lock
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("store: locking %s: %w", path, err)
	}
	held, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(held, now) {
		return "", nil // converted by another process meanwhile
	}
	subs, err := ReadLegacy(bufio.NewReader(f))
	if err != nil {
		return "", fmt.Errorf("%w (%s)", err, path)
	}
	tmp := path + ".import"
	for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("store: removing leftover %s: %w", p, err)
		}
	}
	st, err := OpenOptions(tmp, opts)
	if err != nil {
		return "", err
	}
	if _, err := st.PutAll(subs, true); err != nil {
		st.Close()
		return "", fmt.Errorf("store: importing %s: %w", path, err)
	}
	if err := st.Close(); err != nil { // checkpoints: tmp alone is the store
		return "", err
	}
	backup := path + ".legacy"
	if err := os.Remove(backup); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("store: %w", err)
	}
	if err := os.Link(path, backup); err != nil {
		return "", fmt.Errorf("store: keeping the legacy log: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("store: replacing the legacy log: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return backup, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
