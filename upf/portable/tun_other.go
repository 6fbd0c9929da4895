//go:build !linux

package portable

import (
	"errors"
	"net/netip"
)

func setupLink(name string, mtu int, pool netip.Prefix) error {
	return errors.ErrUnsupported
}

// PoolRoute is Linux-only.
func PoolRoute(pool netip.Prefix) (*PoolInUseError, error) { return nil, errors.ErrUnsupported }
