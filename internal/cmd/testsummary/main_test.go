package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture is a module whose tests pass, skip (one with a reason on two
// lines, one a subtest) and, with FIXTURE_FAIL set, fail (one a subtest);
// bad is a package of it that does not build; with FIXTURE_DIE set, the
// test binaries of die/... die while tests run: a panic outside the
// test's goroutine, os.Exit, and the -timeout panic with four parallel
// subtests running.
var fixture = map[string]string{
	"go.mod": "module fixture\n\ngo 1.26\n",
	"f_test.go": `package fixture

import (
	"fmt"
	"os"
	"testing"
)

func TestPass(t *testing.T) { t.Log("a passing test's log") }

func TestSkipped(t *testing.T) { t.Skip("needs the thing: absent") }

func TestSkippedToo(t *testing.T) { t.Skip("needs the thing: absent") }

func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) { t.Skip("first line\nsecond line") })
	t.Run("b", func(t *testing.T) {
		if os.Getenv("FIXTURE_FAIL") != "" {
			t.Error("boom")
		}
	})
}

func TestMaybeFail(t *testing.T) {
	fmt.Println("printed by the test")
	if os.Getenv("FIXTURE_FAIL") != "" {
		t.Fatal("failed as asked")
	}
}

func TestLogThenSkip(t *testing.T) {
	t.Log("built a namespace\nwith two lines")
	t.Skip("needs the thing: absent")
}
`,
	"bad/b_test.go": "package bad\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefinedFunction() }\n",
	"die/panic/p_test.go": `package panic

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestPanic(t *testing.T) {
	if os.Getenv("FIXTURE_DIE") == "" {
		return
	}
	fmt.Println("printed before the goroutine's panic")
	go panic("boom in a goroutine")
	time.Sleep(time.Minute)
}
`,
	"die/exit/e_test.go": `package exit

import (
	"fmt"
	"os"
	"testing"
)

func TestExit(t *testing.T) {
	if os.Getenv("FIXTURE_DIE") == "" {
		return
	}
	fmt.Println("printed before os.Exit")
	os.Exit(3)
}
`,
	"die/hang/h_test.go": `package hang

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestHang(t *testing.T) {
	fmt.Println("printed by the parent")
	for _, name := range []string{"a", "b", "c", "d"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if os.Getenv("FIXTURE_DIE") != "" {
				fmt.Println("subtest", name, "started")
				time.Sleep(time.Minute)
			}
		})
	}
}
`,
}

func writeFixture(t *testing.T) string {
	dir := t.TempDir()
	for name, body := range fixture {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRun runs go test through testsummary on the fixture: plain go
// test's lines for what passes and fails, go test's exit status, and at
// the end the skipped tests grouped by package and reason.
func TestRun(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH")
	}
	dir := writeFixture(t)
	t.Setenv("GOFLAGS", "")

	var out, errOut bytes.Buffer
	code := run(goCmd, dir, []string{"-count=1", "."}, "fixture", &out, &errOut)
	got := out.String()
	if code != 0 {
		t.Fatalf("passing run: exit %d\n%s%s", code, got, errOut.String())
	}
	for _, want := range []string{
		"ok  \tfixture\t",
		"\nskipped: 4 test(s) in 1 package(s)",
		"  fixture: needs the thing: absent\n      TestSkipped, TestSkippedToo, TestLogThenSkip\n",
		"  fixture: first line second line\n      TestSub/a\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("passing run: no %q in\n%s", want, got)
		}
	}
	for _, not := range []string{"=== RUN", "a passing test's log", "--- PASS", "\nPASS\n"} {
		if strings.Contains(got, not) {
			t.Errorf("passing run: %q (go test -v's) in\n%s", not, got)
		}
	}

	t.Setenv("FIXTURE_FAIL", "1")
	out.Reset()
	code = run(goCmd, dir, []string{"-count=1", "./..."}, "fixture", &out, &errOut)
	got = out.String()
	if code == 0 {
		t.Fatalf("failing run: exit 0\n%s", got)
	}
	for _, want := range []string{
		"--- FAIL: TestSub (",
		"\n    --- FAIL: TestSub/b (",
		"\n        f_test.go:19: boom\n",
		"--- FAIL: TestMaybeFail (",
		"printed by the test\n",
		"f_test.go:27: failed as asked\n",
		"FAIL\tfixture\t",
		"undefined: undefinedFunction", // the build error
		"FAIL\tfixture/bad [build failed]",
		"\nskipped: 4 test(s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("failing run: no %q in\n%s", want, got)
		}
	}
	if strings.Index(got, "--- FAIL: TestSub (") > strings.Index(got, "--- FAIL: TestSub/b (") {
		t.Errorf("failing run: the subtest's failure before its parent's:\n%s", got)
	}
}

// TestDyingTestBinaries: tests that a dying test binary leaves unfinished
// print their lines before their package's FAIL line, as plain go test
// does, in the order they started, and the exit status is go test's.
func TestDyingTestBinaries(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH")
	}
	dir := writeFixture(t)
	t.Setenv("GOFLAGS", "")
	t.Setenv("FIXTURE_DIE", "1")
	var out, errOut bytes.Buffer
	code := run(goCmd, dir, []string{"-count=1", "-timeout=1s", "-parallel=4", "./die/..."}, "fixture", &out, &errOut)
	got := out.String()
	if code != 1 {
		t.Errorf("exit %d, want go test's 1\n%s%s", code, got, errOut.String())
	}
	before := func(first, then string) {
		t.Helper()
		i, j := strings.Index(got, first), strings.Index(got, then)
		if i < 0 || j < 0 || i > j {
			t.Errorf("want %q before %q in\n%s", first, then, got)
		}
	}
	before("printed before the goroutine's panic\n", "panic: boom in a goroutine")
	before("panic: boom in a goroutine", "FAIL\tfixture/die/panic\t")
	before("printed before os.Exit\n", "FAIL\tfixture/die/exit\t")
	before("printed by the parent\n", "subtest a started\n")
	before("subtest a started\n", "subtest b started\n")
	before("subtest b started\n", "subtest c started\n")
	before("subtest c started\n", "subtest d started\n")
	before("panic: test timed out after 1s", "FAIL\tfixture/die/hang\t")
	before("subtest d started\n", "FAIL\tfixture/die/hang\t")
}

// TestUnfinishedInStartOrder: the lines of the tests still running when
// their package fails come out in the order the tests started, before the
// package's FAIL line.
func TestUnfinishedInStartOrder(t *testing.T) {
	var out bytes.Buffer
	s := newSummary("m", &out)
	var want strings.Builder
	for i := range 40 {
		name := fmt.Sprintf("TestP/%02d", i)
		s.event(event{Action: "run", Package: "m/p", Test: name})
		s.event(event{Action: "output", Package: "m/p", Test: name, Output: name + " started\n"})
		fmt.Fprintf(&want, "%s started\n", name)
	}
	s.event(event{Action: "output", Package: "m/p", Output: "FAIL\tm/p\t1.005s\n"})
	s.event(event{Action: "fail", Package: "m/p"})
	want.WriteString("FAIL\tm/p\t1.005s\n")
	if out.String() != want.String() {
		t.Errorf("got\n%swant\n%s", out.String(), want.String())
	}
}

// TestReadErrorDrains: when a line of go test's output cannot be read (one
// longer than the scanner takes), the rest is still read, so go test is
// not left blocked on a full pipe and its exit status comes back.
func TestReadErrorDrains(t *testing.T) {
	dir := t.TempDir()
	fakeGo := filepath.Join(dir, "go")
	// 17 MiB on one line, more than read takes, then 1 MiB more: far
	// more than a pipe holds.
	script := "#!/bin/sh\nhead -c 17825792 /dev/zero | tr '\\0' x\necho\nhead -c 1048576 /dev/zero | tr '\\0' y\necho\nexit 3\n"
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() { done <- run(fakeGo, dir, nil, "", io.Discard, &errOut) }()
	select {
	case code := <-done:
		if code != 3 {
			t.Errorf("exit %d, want the go command's 3", code)
		}
		if !strings.Contains(errOut.String(), "token too long") {
			t.Errorf("the read error is not reported: %q", errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return: the go command is blocked writing to a pipe nobody reads")
	}
}
