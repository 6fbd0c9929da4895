package sockowner

import (
	"net"

	"golang.org/x/sys/unix"
)

// PeerUID is the uid of the process at the other end of a Unix socket
// (SO_PEERCRED): who a local API (the operator socket, the N2 front end's
// unit socket) is talking to.
func PeerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}
