//go:build !amd64

package classify

func lookup4(list []rtRef, h *Header, best uint64) (uint64, int) { return lookup4Go(list, h, best) }
