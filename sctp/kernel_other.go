//go:build !linux

package sctp

import "context"

// KernelAvailable reports whether the kernel can open SCTP sockets; tern
// uses kernel SCTP on Linux only.
func KernelAvailable() bool { return false }

func listenKernel(Config, string) (Listener, error) { return nil, ErrKernelUnavailable }

func dialKernel(context.Context, Config, string) (Conn, error) { return nil, ErrKernelUnavailable }
