package httpserve

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServeAndClose: a request is served; Close lets one in flight finish
// and returns once the server no longer accepts connections.
func TestServeAndClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	s := Start(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		io.WriteString(w, "ok")
	}), nil, "test server")
	url := "http://" + s.Addr().String()
	res, err := http.Get(url + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	slow := make(chan error, 1)
	go func() {
		res, err := http.Get(url + "/slow")
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if string(b) != "ok" {
				err = io.ErrUnexpectedEOF
			}
		}
		slow <- err
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("the request in flight at Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("still accepting connections after Close")
	}
}
