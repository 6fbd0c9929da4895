// Command testsummary runs `go test -json` with the arguments it is given
// and prints what plain `go test` prints for a list of packages (an "ok"
// line for each package that passes, the output of the tests that fail,
// build errors), then the tests that skipped and why, grouped by package
// and reason, which plain `go test` shows only with -v. Its exit status is
// go test's (1 as well if a test failed while go test said otherwise).
// `make test` runs it:
//
//	go run ./internal/cmd/testsummary [-go GO] [--] [go test flags] [packages]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
)

func main() {
	fs := flag.NewFlagSet("testsummary", flag.ExitOnError)
	goCmd := fs.String("go", "go", "the go command")
	fs.Parse(os.Args[1:])
	os.Exit(run(*goCmd, "", fs.Args(), modulePath(), os.Stdout, os.Stderr))
}

// run runs go test -json with args in dir ("": the working directory) and
// summarizes its events to out; it returns the exit status.
func run(goCmd, dir string, args []string, module string, out, errOut io.Writer) int {
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(errOut, "testsummary:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(errOut, "testsummary:", err)
		return 1
	}
	// Ctrl-C reaches go test too, which stops the test binaries and says
	// what failed: read on until it exits.
	signal.Ignore(os.Interrupt)
	s := newSummary(module, out)
	serr := s.read(stdout)
	if serr != nil {
		// Read go test's output to its end, or it blocks on a full pipe
		// and Wait never returns.
		io.Copy(io.Discard, stdout)
	}
	werr := cmd.Wait()
	s.writeSkips()
	if serr != nil {
		fmt.Fprintln(errOut, "testsummary: reading go test's output:", serr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		return exit.ExitCode()
	case werr != nil:
		fmt.Fprintln(errOut, "testsummary:", werr)
		return 1
	case serr != nil, s.failed:
		return 1
	}
	return 0
}

// modulePath is the module of the working directory's go.mod, for shorter
// package names in the skip list ("" where there is none).
func modulePath() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	return ""
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// test is the output of a running test that plain go test would show if
// it failed: its lines and those of its subtests that failed or skipped.
type test struct {
	lines []string
}

// skip is a test that skipped, with its reason.
type skip struct {
	pkg, test, reason string
}

type summary struct {
	module string
	out    io.Writer
	tests  map[string]*test // by package + " " + test name
	// started lists, by package, the keys of tests in the order they
	// started, for the tests a dying test binary leaves unfinished.
	started map[string][]string
	skips   []skip
	failed  bool
}

func newSummary(module string, out io.Writer) *summary {
	return &summary{module: module, out: out, tests: map[string]*test{}, started: map[string][]string{}}
}

// testOf returns the test named name of package pkg, which starts with
// its first event.
func (s *summary) testOf(pkg, name string) *test {
	key := pkg + " " + name
	t := s.tests[key]
	if t == nil {
		t = &test{}
		s.tests[key] = t
		s.started[pkg] = append(s.started[pkg], key)
	}
	return t
}

// flushUnfinished prints what the tests of pkg that have not ended
// printed, in the order they started: a test binary that died (a panic
// outside the test's goroutine, the -timeout panic, os.Exit, a signal)
// leaves them without an end, and plain go test shows their output.
func (s *summary) flushUnfinished(pkg string) {
	for _, key := range s.started[pkg] {
		if t, ok := s.tests[key]; ok {
			for _, l := range t.lines {
				io.WriteString(s.out, l)
			}
			delete(s.tests, key)
		}
	}
	delete(s.started, pkg)
}

// read consumes the events until EOF, printing as it goes.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.out, "%s\n", line) // not an event: pass it on
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

func (s *summary) event(e event) {
	switch {
	case e.Action == "build-output":
		io.WriteString(s.out, e.Output)
	case e.Test == "":
		s.packageEvent(e)
	default:
		s.testEvent(e)
	}
}

// packageEvent prints a package's own lines as plain go test does: "ok",
// "FAIL", "?" for no test files, panics and timeouts outside a test; not
// the "PASS" that -v adds.
func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		// The package's result line ("FAIL\tpkg\t1.005s", or the binary's
		// "FAIL") comes after the tests: those that have not ended died
		// with the binary, and their lines go before it.
		if strings.HasPrefix(e.Output, "FAIL") || strings.HasPrefix(e.Output, "ok ") {
			s.flushUnfinished(e.Package)
		}
		if strings.TrimSpace(e.Output) != "PASS" {
			io.WriteString(s.out, e.Output)
		}
	case "fail":
		s.failed = true
		s.flushUnfinished(e.Package)
	case "pass", "skip":
		s.flushUnfinished(e.Package)
	}
}

func (s *summary) testEvent(e event) {
	t := s.testOf(e.Package, e.Test)
	switch e.Action {
	case "output":
		if !strings.HasPrefix(e.Output, "=== ") { // -v's framing: RUN, PAUSE, CONT, NAME
			t.lines = append(t.lines, e.Output)
		}
	case "skip":
		s.skips = append(s.skips, skip{pkg: e.Package, test: e.Test, reason: reason(t.lines)})
		s.end(e, t, false)
	case "fail":
		s.failed = true
		s.end(e, t, true)
	case "pass":
		delete(s.tests, e.Package+" "+e.Test)
	}
}

// end files the lines of a test that failed or skipped: a subtest's go to
// its parent, indented one level deeper with its "--- FAIL"/"--- SKIP"
// line first, as plain go test prints them; a top-level test that failed
// prints them.
func (s *summary) end(e event, t *test, failed bool) {
	delete(s.tests, e.Package+" "+e.Test)
	lines := t.lines
	// -v prints a test's result line after its output; plain go test
	// before.
	if i := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "--- FAIL: ") || strings.HasPrefix(l, "--- SKIP: ")
	}); i > 0 {
		lines = append(append([]string{lines[i]}, lines[:i]...), lines[i+1:]...)
	}
	parent, _, sub := cutLast(e.Test)
	if !sub {
		if failed {
			for _, l := range lines {
				io.WriteString(s.out, l)
			}
		}
		return
	}
	p := s.testOf(e.Package, parent)
	for _, l := range lines {
		p.lines = append(p.lines, "    "+l)
	}
}

func cutLast(name string) (parent, last string, ok bool) {
	i := strings.LastIndex(name, "/")
	if i < 0 {
		return "", name, false
	}
	return name[:i], name[i+1:], true
}

// logPrefix is the file:line a t.Log or t.Skip line starts with.
var logPrefix = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// reason is what a skipped test said: the last entry it logged (t.Skip's
// message comes last; a t.Log before it, such as a description of the
// namespaces it built, is not the reason), its file:line prefix dropped
// so that tests skipping for one reason group together, its continuation
// lines joined.
func reason(lines []string) string {
	last := -1
	for i, l := range lines {
		if logPrefix.MatchString(l) {
			last = i
		}
	}
	var parts []string
	for _, l := range lines[max(last, 0):] {
		if strings.HasPrefix(strings.TrimSpace(l), "--- SKIP: ") {
			continue
		}
		if l = strings.TrimSpace(logPrefix.ReplaceAllString(l, "")); l != "" {
			parts = append(parts, l)
		}
	}
	if len(parts) == 0 {
		return "no reason given"
	}
	return strings.Join(parts, " ")
}

// namesShown is how many names of the tests skipped for one reason are
// listed.
const namesShown = 8

// writeSkips prints the tests that skipped, by package and reason, in the
// order they ran.
func (s *summary) writeSkips() {
	if len(s.skips) == 0 {
		return
	}
	type group struct {
		pkg, reason string
		tests       []string
	}
	var groups []*group
	pkgs := map[string]bool{}
	for _, sk := range s.skips {
		pkgs[sk.pkg] = true
		i := slices.IndexFunc(groups, func(g *group) bool { return g.pkg == sk.pkg && g.reason == sk.reason })
		if i < 0 {
			groups = append(groups, &group{pkg: sk.pkg, reason: sk.reason})
			i = len(groups) - 1
		}
		groups[i].tests = append(groups[i].tests, sk.test)
	}
	fmt.Fprintf(s.out, "\nskipped: %d test(s) in %d package(s), by reason (go test -v -run NAME ./PACKAGE shows one):\n", len(s.skips), len(pkgs))
	for _, g := range groups {
		pkg := strings.TrimPrefix(strings.TrimPrefix(g.pkg, s.module), "/")
		if pkg == "" {
			pkg = g.pkg
		}
		names := g.tests
		more := ""
		if len(names) > namesShown {
			more = fmt.Sprintf(" and %d more", len(names)-namesShown)
			names = names[:namesShown]
		}
		fmt.Fprintf(s.out, "  %s: %s\n      %s%s\n", pkg, g.reason, strings.Join(names, ", "), more)
	}
}
