package pgtest

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Proxy is a TCP proxy between a test's pool and the test server that the
// test can cut, to play a database outage or a restart: the shared server
// itself cannot be stopped.
type Proxy struct {
	// URL is the test's schema URL, through the proxy.
	URL string

	target string
	ln     net.Listener
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

// NewProxy starts a proxy to d's server, closed when the test ends.
func NewProxy(t testing.TB, d *DB) *Proxy {
	t.Helper()
	u, err := url.Parse(d.URL)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", d.URL, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: proxy listen: %v", err)
	}
	p := &Proxy{target: u.Host, ln: ln, conns: map[net.Conn]struct{}{}}
	u.Host = ln.Addr().String()
	p.URL = u.String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.serve()
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		p.Cut()
	})
	return p
}

// Pool opens a pool of at most maxConns connections through the proxy,
// closed when the test ends. Unlike db.Open's, it never pings a pooled
// connection before handing it out, so that a test meets the connections
// a cut killed however long they sat idle.
func (p *Proxy) Pool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(p.URL)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", p.URL, err)
	}
	cfg.MaxConns = maxConns
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool through proxy: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Cut closes every proxied connection and refuses new ones (they are
// accepted and closed at once) until Restore: the database is gone.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Restart is Cut then Restore: every connection open now is dead, and the
// database answers new ones, as after a server restart.
func (p *Proxy) Restart() {
	p.Cut()
	p.Restore()
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // the listener closed
		}
		go p.pipe(c)
	}
}

// pipe copies between c and a new connection to the server until either
// side closes or the proxy is cut.
func (p *Proxy) pipe(c net.Conn) {
	p.mu.Lock()
	refuse := p.cut
	p.mu.Unlock()
	if refuse {
		c.Close()
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut { // cut while dialing
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, ends := range [][2]net.Conn{{c, s}, {s, c}} {
		wg.Go(func() {
			_, _ = io.Copy(ends[0], ends[1]) // ends when either side closes
			ends[0].Close()
			ends[1].Close()
		})
	}
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// Fill opens n connections of pool at once and returns them to it, so the
// pool holds n idle ones, and says which server processes they are.
func Fill(t testing.TB, pool *pgxpool.Pool, n int) []int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pids := make([]int32, n)
	for i := range pids {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("pgtest: fill pool: %v", err)
		}
		defer c.Release() // held until all n are open
		if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pids[i]); err != nil {
			t.Fatalf("pgtest: fill pool: %v", err)
		}
	}
	return pids
}
