package report

import (
	"bytes"
	"os"
	"strconv"
)

// ResidentBytes returns the resident set size (VmRSS) of process pid, or of
// this process when pid is 0, in bytes; 0 where /proc cannot tell.
func ResidentBytes(pid int) uint64 {
	path := "/proc/self/status"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			if f := bytes.Fields(v); len(f) > 0 {
				if kb, err := strconv.ParseUint(string(f[0]), 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}
