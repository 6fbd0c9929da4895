package traffic

import "syscall"

// errNoBufs: the socket's send queue is full (the receiver is slower).
var errNoBufs = syscall.ENOBUFS
