package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tern5g/tern/config"
)

// TestHelpNamesEveryNF: tern --help says that nf runs any NF as its own
// process, naming them all, not "(upf)" alone.
func TestHelpNamesEveryNF(t *testing.T) {
	var out, errs strings.Builder
	if code := run([]string{"--help"}, &out, &errs); code != 0 {
		t.Fatalf("tern --help: exit %d", code)
	}
	var line string
	for l := range strings.SplitSeq(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "nf ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no nf line in tern --help:\n%s", out.String())
	}
	for _, nf := range append(config.NFNames, "upf") {
		if !regexp.MustCompile(`\b` + nf + `\b`).MatchString(line) {
			t.Errorf("tern --help's nf line does not name %s: %q", nf, line)
		}
	}
	if strings.Contains(line, "(upf)") {
		t.Errorf("tern --help's nf line: %q", line)
	}
}

// flagLine is a flag's first line in a flag set's usage: "  -name ARG",
// where ARG is the argument's type or the back-quoted word of its usage.
var flagLine = regexp.MustCompile(`^  -([a-z0-9-]+)(?: ([^\t]*))?`)

// TestFlagArgumentNames: in every command's -h, each flag's argument is
// named by one word. The flag package takes a back-quoted phrase of a
// usage text as the argument's name: sim -h showed "-hn-pubkey tern up".
func TestFlagArgumentNames(t *testing.T) {
	cmds := [][]string{{"up"}, {"demo"}, {"sim"}, {"config"}, {"nf", "amf"}, {"nf", "upf"}, {"lab", "up"}}
	for _, s := range []string{"add", "list", "show", "delete", "import"} {
		cmds = append(cmds, []string{"subscriber", s})
	}
	for _, b := range benchNames() {
		cmds = append(cmds, []string{"bench", b})
	}
	for _, c := range cmds {
		usage := captureOutput(t, func() { run(append(c, "-h"), os.Stdout, os.Stderr) })
		flags := 0
		for l := range strings.SplitSeq(usage, "\n") {
			m := flagLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			flags++
			if strings.Contains(m[2], " ") {
				t.Errorf("tern %s -h: -%s's argument is named %q (a back-quoted phrase in its usage?)", strings.Join(c, " "), m[1], m[2])
			}
		}
		if flags == 0 {
			t.Errorf("tern %s -h lists no flags:\n%s", strings.Join(c, " "), usage)
		}
	}
}

// captureOutput runs fn with os.Stdout and os.Stderr going to a file, and
// returns what it wrote: flag sets print their usage on os.Stderr.
func captureOutput(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = f, f
	defer func() { os.Stdout, os.Stderr = stdout, stderr }()
	fn()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
