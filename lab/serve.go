package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netns"
)

// Listen opens a TCP listener inside namespace ns. A socket belongs to the
// namespace of the thread that made it, so the calling goroutine is pinned
// to its thread, moved into ns for the socket() call, and moved back.
func Listen(ns, addr string) (net.Listener, error) {
	var l net.Listener
	err := Do(ns, func() error {
		var err error
		l, err = net.Listen("tcp4", addr)
		return err
	})
	return l, err
}

// ListenUDP opens a UDP socket inside namespace ns (see Listen).
func ListenUDP(ns, addr string) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := Do(ns, func() error {
		ua, err := net.ResolveUDPAddr("udp4", addr)
		if err != nil {
			return err
		}
		c, err = net.ListenUDP("udp4", ua)
		return err
	})
	return c, err
}

// Do runs fn on a thread inside namespace ns. fn must not start goroutines
// that expect to inherit the namespace (they would not).
func Do(ns string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("lab: current netns: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(ns)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("lab: netns %s: %w", ns, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("lab: enter netns %s: %w", ns, err)
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		// The thread stays locked and dies with the goroutine rather than
		// serve others from the wrong namespace.
		return errors.Join(fnErr, fmt.Errorf("lab: leave netns %s: %w", ns, err))
	}
	runtime.UnlockOSThread()
	return fnErr
}

// Servers are the DN servers of a lab: an HTTP server on 192.0.2.1:8080 in
// every DN, answering "GET /" with the DN's name and "GET /bytes?n=N" with N
// bytes, and, where iperf3 is installed, an iperf3 server on
// 192.0.2.1:5201 in every DN.
type Servers struct {
	http  []*http.Server
	iperf []*exec.Cmd
	wg    sync.WaitGroup
}

// Iperf reports whether the iperf3 servers run (not when iperf3 is not
// installed).
func (s *Servers) Iperf() bool { return len(s.iperf) > 0 }

// IperfInstalled reports whether iperf3 is in PATH, so that StartServers
// runs its servers.
func IperfInstalled() bool {
	_, err := exec.LookPath("iperf3")
	return err == nil
}

// maxBytes bounds /bytes.
const maxBytes = 1 << 30

// StartServers starts the DN servers. iperf3 servers are skipped (not an
// error) when iperf3 is not installed: Servers.Iperf says.
func (l *Lab) StartServers(ctx context.Context) (*Servers, error) {
	s := &Servers{}
	iperf := IperfInstalled()
	for _, dnn := range l.cfg.DNNs {
		ln, err := Listen(l.DN(dnn), net.JoinHostPort(DNServer.String(), strconv.Itoa(HTTPPort)))
		if err != nil {
			s.Close()
			return nil, err
		}
		srv := &http.Server{Handler: dnHandler(dnn), ReadHeaderTimeout: 5 * time.Second}
		s.http = append(s.http, srv)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.Serve(ln)
		}()
		if iperf {
			cmd := l.Command(context.Background(), l.DN(dnn), "iperf3", "-s", "-B", DNServer.String(), "-p", strconv.Itoa(IperfPort))
			if err := cmd.Start(); err != nil {
				s.Close()
				return nil, fmt.Errorf("lab: iperf3 server in %s: %w", l.DN(dnn), err)
			}
			s.iperf = append(s.iperf, cmd)
		}
	}
	return s, nil
}

func dnHandler(dnn string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s\n", dnn)
	})
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 || n > maxBytes {
			http.Error(w, "n: 0.."+strconv.Itoa(maxBytes), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		buf := make([]byte, 64<<10)
		for n > 0 {
			k := min(n, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	return mux
}

// Close stops the servers.
func (s *Servers) Close() error {
	for _, srv := range s.http {
		srv.Close()
	}
	for _, c := range s.iperf {
		c.Process.Kill()
		c.Wait()
	}
	s.wg.Wait()
	return nil
}
