// Package classbench reads ClassBench rule sets and header traces into
// classify rules and headers. The sets are not in the repository (about
// 100 MB); testdata/classbench/README.md says where they come from and how
// they are laid out.
package classbench

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tern5g/tern/classify"
)

// Sets are the nine ClassBench sets tern is measured on.
var Sets = []string{
	"acl1_1k", "fw1_1k", "ipc1_1k",
	"acl1_10k", "fw1_10k", "ipc1_10k",
	"acl1_100k", "fw1_100k", "ipc1_100k",
}

// Packet is one trace header and the index of the rule it was generated
// from (not necessarily the best match).
type Packet struct {
	Header classify.Header
	From   int
}

// ParseRules reads ClassBench filters. Line i (0-based) becomes the rule
// with ID i and precedence i: the first line wins. The TCP-flags field is
// ignored, as PartitionSort and TupleMerge do.
func ParseRules(r io.Reader) ([]classify.Rule, error) {
	var rules []classify.Rule
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		line++
		if text == "" {
			continue
		}
		id := uint32(len(rules))
		rule, err := parseRule(text, id)
		if err != nil {
			return nil, fmt.Errorf("classbench: rules line %d: %w", line, err)
		}
		rules = append(rules, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("classbench: read rules: %w", err)
	}
	return rules, nil
}

func parseRule(text string, id uint32) (classify.Rule, error) {
	r := classify.Rule{ID: id, Precedence: id}
	if !strings.HasPrefix(text, "@") {
		return r, fmt.Errorf("missing '@'")
	}
	f := strings.Fields(text[1:])
	// src dst slo : shi dlo : dhi proto/mask flags/mask
	if len(f) < 9 || f[3] != ":" || f[6] != ":" {
		return r, fmt.Errorf("want 'src dst lo : hi lo : hi proto/mask ...', got %q", text)
	}
	var err error
	if r.SrcIP, err = parsePrefix(f[0]); err != nil {
		return r, err
	}
	if r.DstIP, err = parsePrefix(f[1]); err != nil {
		return r, err
	}
	if r.SrcPort, err = parseRange(f[2], f[4]); err != nil {
		return r, err
	}
	if r.DstPort, err = parseRange(f[5], f[7]); err != nil {
		return r, err
	}
	if r.SrcPort != (classify.PortRange{Lo: 0, Hi: 0xffff}) {
		r.Has |= classify.FieldSrcPort
	}
	if r.DstPort != (classify.PortRange{Lo: 0, Hi: 0xffff}) {
		r.Has |= classify.FieldDstPort
	}
	pv, pm, ok := strings.Cut(f[8], "/")
	if !ok {
		return r, fmt.Errorf("protocol %q: want value/mask", f[8])
	}
	v, err1 := strconv.ParseUint(pv, 0, 8)
	m, err2 := strconv.ParseUint(pm, 0, 8)
	if err1 != nil || err2 != nil {
		return r, fmt.Errorf("protocol %q: bad number", f[8])
	}
	switch m {
	case 0xff:
		r.Proto = uint8(v)
		r.Has |= classify.FieldProto
	case 0:
	default:
		return r, fmt.Errorf("protocol mask %#x: only 0x00 and 0xFF are supported", m)
	}
	return r, nil
}

func parsePrefix(s string) (classify.Prefix, error) {
	a, l, ok := strings.Cut(s, "/")
	if !ok {
		return classify.Prefix{}, fmt.Errorf("prefix %q: missing '/'", s)
	}
	bits, err := strconv.Atoi(l)
	if err != nil || bits < 0 || bits > 32 {
		return classify.Prefix{}, fmt.Errorf("prefix %q: bad length", s)
	}
	parts := strings.Split(a, ".")
	if len(parts) != 4 {
		return classify.Prefix{}, fmt.Errorf("prefix %q: bad address", s)
	}
	var v uint32
	for _, p := range parts {
		o, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return classify.Prefix{}, fmt.Errorf("prefix %q: bad octet %q", s, p)
		}
		v = v<<8 | uint32(o)
	}
	return classify.PrefixFrom4(v, bits), nil
}

func parseRange(lo, hi string) (classify.PortRange, error) {
	l, err1 := strconv.ParseUint(lo, 10, 16)
	h, err2 := strconv.ParseUint(hi, 10, 16)
	if err1 != nil || err2 != nil || l > h {
		return classify.PortRange{}, fmt.Errorf("port range %s : %s", lo, hi)
	}
	return classify.PortRange{Lo: uint16(l), Hi: uint16(h)}, nil
}

// ParseTrace reads a header trace.
func ParseTrace(r io.Reader) ([]Packet, error) {
	var pkts []Packet
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 5 {
			return nil, fmt.Errorf("classbench: trace line %d: %d fields, want >= 5", line, len(f))
		}
		var n [5]uint64
		bits := [5]int{32, 32, 16, 16, 8}
		for i := range n {
			v, err := strconv.ParseUint(f[i], 10, bits[i])
			if err != nil {
				return nil, fmt.Errorf("classbench: trace line %d field %d: %w", line, i+1, err)
			}
			n[i] = v
		}
		p := Packet{From: -1, Header: classify.Header{
			SrcIP: classify.AddrFrom4(uint32(n[0])), DstIP: classify.AddrFrom4(uint32(n[1])),
			SrcPort: uint16(n[2]), DstPort: uint16(n[3]), Proto: uint8(n[4]),
		}}
		if len(f) >= 7 {
			if from, err := strconv.Atoi(f[6]); err == nil {
				p.From = from
			}
		}
		pkts = append(pkts, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("classbench: read trace: %w", err)
	}
	return pkts, nil
}

// Set is one rule set with its trace.
type Set struct {
	Name  string
	Rules []classify.Rule
	Trace []Packet
}

// Load reads dir/name.rules(.gz) and dir/name.trace(.gz).
func Load(dir, name string) (*Set, error) {
	s := &Set{Name: name}
	if err := withFile(dir, name+".rules", func(r io.Reader) (err error) {
		s.Rules, err = ParseRules(r)
		return err
	}); err != nil {
		return nil, err
	}
	if err := withFile(dir, name+".trace", func(r io.Reader) (err error) {
		s.Trace, err = ParseTrace(r)
		return err
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// withFile opens base or base.gz under dir.
func withFile(dir, base string, fn func(io.Reader) error) error {
	path := filepath.Join(dir, base)
	f, err := os.Open(path)
	gz := false
	if err != nil {
		path += ".gz"
		if f, err = os.Open(path); err != nil {
			return fmt.Errorf("classbench: %w", err)
		}
		gz = true
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<16)
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("classbench: %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	if err := fn(r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// DefaultDir is where the sets are looked for: $TERN_CLASSBENCH, else
// testdata/classbench at the root of the module holding the working
// directory (found by its go.mod), else testdata/classbench relative to
// it. A directory outside the repository is only ever taken from
// $TERN_CLASSBENCH or a --classbench flag: a clone must not depend on
// paths beside it.
func DefaultDir() string {
	if d := os.Getenv("TERN_CLASSBENCH"); d != "" {
		return d
	}
	local := filepath.Join("testdata", "classbench")
	wd, err := os.Getwd()
	if err != nil {
		return local
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, local)
		}
		if d == filepath.Dir(d) {
			return local
		}
	}
}

// TestDir is where tests find the sets: DefaultDir when it holds them,
// else the project's shared data beside the clone (../shared/classbench
// next to the module root), which tests may use and skip without, saying
// why. Commands never look there (DefaultDir's comment says why).
func TestDir() string {
	dir := DefaultDir()
	if Available(dir, Sets[0]) == nil {
		return dir
	}
	root := filepath.Dir(filepath.Dir(dir)) // DefaultDir is <module>/testdata/classbench
	shared := filepath.Join(root, "..", "shared", "classbench")
	if _, err := os.Stat(shared); err == nil {
		return shared
	}
	return dir
}

// Available reports whether dir holds set (its rules file), with the
// reason when it does not: for tests to skip and commands to say what is
// missing.
func Available(dir, set string) error {
	if _, err := os.Stat(filepath.Join(dir, set+".rules.gz")); err != nil {
		return fmt.Errorf("no ClassBench set %s in %s (set TERN_CLASSBENCH or see testdata/classbench/README.md): %w", set, dir, err)
	}
	return nil
}
