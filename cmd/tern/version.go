package main

import (
	"runtime/debug"
	"strings"
)

// commit is the source revision, set by the Makefile and the Dockerfile
// with -ldflags "-X main.commit=..." for builds without the .git directory
// that go build reads the revision from (a container build context).
var commit string

// version reports the module version, the commit (vcs.revision, or commit
// from -ldflags), whether the tree had uncommitted changes, and the Go
// release: "tern (devel) commit 4d0efa3c1a2b go1.26.8".
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "tern (unknown build) commit " + orUnknown(commit)
	}
	rev, modified := commit, false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := []string{"tern", info.Main.Version, "commit", orUnknown(rev)}
	if modified {
		v = append(v, "(modified)")
	}
	return strings.Join(append(v, info.GoVersion), " ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
