// Package httpserver runs a long-running HTTP server (the poll server,
// the local runner) the way a long-poll needs: headers and bodies are
// bounded in time but answers are not, idle connections are dropped, and
// stopping drains parked long-polls before in-flight requests get a grace
// to finish.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// ShutdownGrace is how long a long-running server (the poll server, the
// local runner) lets in-flight requests finish once it stops; parked
// long-polls answer at once. template.yaml's StopTimeout of the poll
// container exceeds it.
const ShutdownGrace = 10 * time.Second

// DefaultIdleTimeout is Options.IdleTimeout (and config.Config.IdleTimeout)
// unless set: clients that came and went do not pin a socket each for
// long.
const DefaultIdleTimeout = 2 * time.Minute

// Options say how Serve runs a long-running server.
type Options struct {
	// Drain makes parked long-polls answer at once; Serve calls it when
	// its ctx ends.
	Drain func()
	// Grace bounds how long in-flight requests may take to finish after.
	Grace time.Duration
	// BodyTimeout bounds how long a request's body may take to arrive
	// (config.Config.BodyTimeout); 0 leaves it unbounded.
	BodyTimeout time.Duration
	// IdleTimeout is how long an idle keep-alive connection is kept
	// (config.Config.IdleTimeout); 0 is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Ready, when set, gets the address Serve listens on, once it does.
	Ready func(net.Addr)
}

// headerTimeout bounds how long a request's headers may take to arrive.
const headerTimeout = 10 * time.Second

// Serve runs h on addr until ctx ends, then drains: parked long-polls are
// answered at once and in-flight requests get up to opt.Grace to finish.
func Serve(ctx context.Context, addr string, h http.Handler, opt Options) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	// No write timeout, nor a ReadTimeout: a long-poll holds its answer
	// by design, and the server reads the connection while it waits, to
	// notice the client leaving; a deadline on that read would end the
	// poll. Headers and bodies are bounded instead. Idle keep-alive
	// connections are dropped after a while, or a crowd of agents that
	// came and went would pin a socket each.
	idle := opt.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	srv := &http.Server{Handler: limitBodyTime(h, opt.BodyTimeout), ReadHeaderTimeout: headerTimeout, IdleTimeout: idle}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if opt.Ready != nil {
		opt.Ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	opt.Drain()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opt.Grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// Listening formats a listener address as a URL a client on this machine can use.
func Listening(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if host == "" || host == "::" || host == "0.0.0.0" || strings.HasPrefix(host, "[") {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// limitBodyTime gives a request with a body until d after its headers to
// send it: a read past that fails with os.ErrDeadlineExceeded, and so does
// the server's own draining of a body the handler left unread, which then
// closes the connection. A request without a body (a long-poll) gets no
// deadline; nor does one whose body has been read to its end, since the
// server clears the deadline then to watch for the client leaving
// (TestServeCutsSlowBodies holds it to that).
func limitBodyTime(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}
