package hook

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxAnswer bounds the answer body read: a take is at most 50 messages,
// each cut by the server.
const maxAnswer = 16 << 20

// post sends one POST of a JSON body to rawURL (http or https) over a
// connection of its own, closed after the answer, and returns the
// answer's status and body. It speaks HTTP/1.1 itself rather than through
// net/http: the hook process answers before the MCP server's packages are
// initialised (mcp/letagents/internal/hookcmd), and net/http is
// initialised only after them. So it goes direct (HTTP(S)_PROXY is not
// read) and asks for no compression. tlsConfig, when set, is the base of
// the TLS configuration (tests give their server's roots).
func post(ctx context.Context, rawURL string, header [][2]string, body []byte, tlsConfig *tls.Config) (int, []byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, nil, err
	}
	port := u.Port()
	switch {
	case u.Scheme == "http" && port == "":
		port = "80"
	case u.Scheme == "https" && port == "":
		port = "443"
	case u.Scheme != "http" && u.Scheme != "https":
		return 0, nil, fmt.Errorf("%s: want an http(s) URL", rawURL)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return 0, nil, orCtx(ctx, err)
	}
	defer conn.Close()
	// The context ends the exchange wherever it stands.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if tlsConfig != nil {
			cfg = tlsConfig.Clone()
		}
		cfg.ServerName, cfg.NextProtos = u.Hostname(), []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, nil, orCtx(ctx, err)
		}
		conn = tc
	}
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	for _, h := range header {
		fmt.Fprintf(w, "%s: %s\r\n", h[0], h[1])
	}
	fmt.Fprintf(w, "Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	w.Write(body)
	if err := w.Flush(); err != nil {
		return 0, nil, orCtx(ctx, err)
	}
	status, answer, err := readAnswer(bufio.NewReader(conn))
	return status, answer, orCtx(ctx, err)
}

// readAnswer reads an HTTP/1.1 answer: its status and its body, sized by
// Content-Length, chunked, or up to the end of the connection.
func readAnswer(r *bufio.Reader) (int, []byte, error) {
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer: %w", err)
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || status < 100 {
		return 0, nil, fmt.Errorf("read the answer: not HTTP/1.x: %q", line)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer's header: %w", err)
	}
	var body []byte
	switch {
	case strings.EqualFold(h.Get("Transfer-Encoding"), "chunked"):
		body, err = readChunked(r)
	case h.Get("Content-Length") != "":
		n, perr := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
		if perr != nil || n < 0 || n > maxAnswer {
			return 0, nil, fmt.Errorf("read the answer: Content-Length %q", h.Get("Content-Length"))
		}
		body = make([]byte, n)
		_, err = io.ReadFull(r, body)
	default:
		body, err = io.ReadAll(io.LimitReader(r, maxAnswer))
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer's body: %w", err)
	}
	return status, body, nil
}

// readChunked reads a chunked body, its trailer ignored.
func readChunked(r *bufio.Reader) ([]byte, error) {
	tp := textproto.NewReader(r)
	var body []byte
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return nil, err
		}
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 || int64(len(body))+n > maxAnswer {
			return nil, fmt.Errorf("chunk size %q", line)
		}
		if n == 0 {
			_, err := tp.ReadMIMEHeader() // the trailer, up to the blank line
			return body, err
		}
		chunk := make([]byte, n+2)
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, err
		}
		if string(chunk[n:]) != "\r\n" {
			return nil, errors.New("chunk not followed by CRLF")
		}
		body = append(body, chunk[:n]...)
	}
}

// orCtx is err, said to be the context's when the context ended it: its
// deadline, set on the connection, shows as an i/o timeout, possibly
// before the context's own timer has marked it done.
func orCtx(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	cerr := ctx.Err()
	if dl, ok := ctx.Deadline(); cerr == nil && ok && !time.Now().Before(dl) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}
