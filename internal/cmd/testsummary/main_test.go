package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a module whose tests pass, skip (one with a reason on two
// lines, one a subtest) and, with FIXTURE_FAIL set, fail (one a subtest);
// bad is a package of it that does not build.
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
