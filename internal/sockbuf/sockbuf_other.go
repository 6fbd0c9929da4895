//go:build !linux

package sockbuf

import "net"

// SetReadBuffer sets conn's receive buffer to n bytes, as far as the
// system allows (SO_RCVBUFFORCE is Linux's).
func SetReadBuffer(conn *net.UDPConn, n int) error { return conn.SetReadBuffer(n) }
