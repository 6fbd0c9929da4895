package classify_test

import (
	"os"
	"path/filepath"

	"github.com/tern5g/tern/classify/classbench"
)

// setsDir is where the tests find the ClassBench sets: classbench.DefaultDir
// ($TERN_CLASSBENCH or the repository's testdata/classbench) when it holds
// them, else the project's shared data beside the clone (../shared/
// classbench), which the tests may use and skip without, with the reason.
// Commands never look there (classbench.DefaultDir's comment says why).
func setsDir() string {
	dir := classbench.DefaultDir()
	if classbench.Available(dir, classbench.Sets[0]) == nil {
		return dir
	}
	root := filepath.Dir(filepath.Dir(dir)) // DefaultDir is <module>/testdata/classbench
	shared := filepath.Join(root, "..", "shared", "classbench")
	if _, err := os.Stat(shared); err == nil {
		return shared
	}
	return dir
}
