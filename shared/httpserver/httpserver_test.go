package httpserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/httpserver"
)

// serve runs h under Serve with the given body timeout until the test ends
// and returns its address.
func serve(t *testing.T, h http.Handler, bodyTimeout time.Duration) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- httpserver.Serve(ctx, "127.0.0.1:0", h, httpserver.Options{Drain: func() {}, Grace: 5 * time.Second,
			BodyTimeout: bodyTimeout, Ready: func(a net.Addr) { addr <- a }})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	select {
	case a := <-addr:
		return a.String()
	case err := <-done:
		t.Fatalf("Serve = %v before listening", err)
		return ""
	}
}

// trickle sends a request announcing a body of size bytes and then sends
// one byte every tick, never finishing, until the server answers or
// closes the connection. It returns the first line of the answer ("" if
// none) and how long the server took.
func trickle(t *testing.T, addr, path string, size int) (string, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	begin := time.Now()
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, size); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	// Only a server that never cuts the body runs into this bound.
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("the server held a trickling body for %v: %v", time.Since(begin).Round(time.Millisecond), err)
	}
	return strings.TrimSpace(line), time.Since(begin)
}

// TestServeCutsSlowBodies trickles bodies at a server with a 1 s body
// timeout, to a handler that reads them and to one that leaves them
// unread, while a long-poll without a body and a request whose body came
// at once both hold past the timeout: those must not be cut.
func TestServeCutsSlowBodies(t *testing.T) {
	t.Parallel()
	const bodyTimeout = time.Second
	release := make(chan struct{})
	held := make(chan error, 2)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /read", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); errors.Is(err, os.ErrDeadlineExceeded) {
			http.Error(w, "too slow", http.StatusRequestTimeout)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("POST /ignore", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-release:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
			held <- fmt.Errorf("%s /hold cut while holding: %w", r.Method, context.Cause(r.Context()))
		}
	})
	addr := serve(t, mux, bodyTimeout)

	answers := make(chan error, 2)
	hold := func(method string, body io.Reader) {
		req, _ := http.NewRequest(method, "http://"+addr+"/hold", body)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s /hold = %d", method, resp.StatusCode)
			}
		}
		answers <- err
	}
	go hold("GET", nil)
	go hold("POST", strings.NewReader(`{"sent":"at once"}`))

	for _, tt := range []struct{ path, want string }{
		{"/read", "HTTP/1.1 408 Request Timeout"},
		{"/ignore", "HTTP/1.1 404 Not Found"},
	} {
		line, took := trickle(t, addr, tt.path, 1000)
		if line != tt.want && line != "" {
			t.Errorf("trickle to %s: answer %q, want %q or a closed connection", tt.path, line, tt.want)
		}
		if took < bodyTimeout {
			t.Errorf("trickle to %s cut after %v, before the body timeout", tt.path, took)
		}
		t.Logf("trickle to %s cut after %v: %q", tt.path, took.Round(time.Millisecond), line)
	}
	// Both holds began before the trickles, so they are past the timeout.
	close(release)
	for range 2 {
		select {
		case err := <-held:
			t.Error(err)
		case err := <-answers:
			if err != nil {
				t.Error(err)
			}
		}
	}
}

// An idle keep-alive connection is closed after Options.IdleTimeout: a
// load balancer's must be shorter, or it may send on a connection the
// server is closing.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- httpserver.Serve(ctx, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}),
			httpserver.Options{Drain: func() {}, Grace: 5 * time.Second, IdleTimeout: time.Second, Ready: func(a net.Addr) { addr <- a }})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()
	c, err := net.Dial("tcp", (<-addr).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	idleFrom := time.Now()
	// Far past the 1 s asked for, well short of the 2 min default.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read %v after %v, want the server to close it (EOF)", err, time.Since(idleFrom).Round(time.Millisecond))
	}
}
