//go:build !linux

package shmstore

import (
	"errors"
	"os"
)

// The writer maps its file MAP_SHARED on Linux only (tern runs on Linux);
// Open, the reader, is portable.
var errUnsupported = errors.New("shmstore: the writer needs Linux")

func mapFile(*os.File, int) ([]byte, error) { return nil, errUnsupported }

func unmap([]byte) error { return nil }

func reserve(*os.File, int64) error { return errUnsupported }
