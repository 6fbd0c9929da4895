package classify_test

import (
	"github.com/tern5g/tern/classify/classbench"
)

// setsDir is where the tests find the ClassBench sets
// (classbench.TestDir).
func setsDir() string { return classbench.TestDir() }
