// Package httpserve runs the plain HTTP servers of a tern process's
// operations endpoints (metrics and health, the operator API): not the
// SBI's (package sbi/httpsbi), which speaks HTTP/2 to other NFs. Each one
// bounds how long a client may take to send its headers, logs its
// errors, and on Close lets the requests in flight finish for a moment.
package httpserve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server serves one handler on one listener until Close.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// headerTimeout bounds how long a client may take to send its request
// headers (a slow client holds a connection, not the server).
const headerTimeout = 5 * time.Second

// closeGrace is how long Close lets requests in flight finish.
const closeGrace = 2 * time.Second

// Start serves h on ln until Close; what names the server in the log line
// of a failure that stops it.
func Start(ln net.Listener, h http.Handler, log *slog.Logger, what string) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: headerTimeout,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" stopped", "err", err)
		}
	}()
	return s
}

// Addr is the address served.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server, letting requests in flight finish for up to
// closeGrace, and returns once it no longer serves.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
