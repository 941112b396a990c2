package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// request is one step of the suite, sent to both servers in turn. Path,
// Body and the header values may hold placeholders, filled from the
// server's own vars: {name}, {name|lower}, and {x*N} for N bytes of 'x'.
type request struct {
	Family, Name string
	Method, Path string
	// Body is sent as application/json unless Type says otherwise.
	Body, Type string
	// Bearer and Cookie name the var holding the token to present, as an
	// Authorization bearer or as the browser session cookie.
	Bearer, Cookie string
	Header         map[string]string
	// Save keeps values of the JSON response under var names: the key is
	// the var, the value a dotted path ("id", "messages.0.id").
	Save map[string]string
	// Stream: the response is an event stream; read its first event (or
	// up to streamRead), then hang up.
	Stream bool
}

func (r request) key() string { return r.Family + "/" + r.Name }

// Bounds of one request: generous, since a poll case may hold for its
// timeout (a few seconds at most in the suite).
const (
	requestTimeout = 30 * time.Second
	streamRead     = 2 * time.Second
	maxBody        = 1 << 20
)

var placeholder = regexp.MustCompile(`\{(?:x\*(\d+)|([A-Za-z0-9_]+)(?:\|(lower))?)\}`)

// fill replaces the placeholders of s from vs. It fails naming the first
// var that was never handed out.
func fill(s string, vs vars) (string, error) {
	var missing string
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		if sub[1] != "" {
			n, _ := strconv.Atoi(sub[1])
			return strings.Repeat("x", n)
		}
		v, ok := vs[sub[2]]
		if !ok {
			if missing == "" {
				missing = sub[2]
			}
			return m
		}
		if sub[3] == "lower" {
			v = strings.ToLower(v)
		}
		return v
	})
	if missing != "" {
		return "", &missingVar{missing}
	}
	return out, nil
}

// missingVar is a placeholder whose var the server never handed out.
type missingVar struct{ name string }

func (e *missingVar) Error() string { return "needs {" + e.name + "}" }

// target is one server under comparison.
type target struct {
	Name string
	URL  string
	vars vars
	// sent counts requests, to give each its own X-Forwarded-For: the
	// anchor rate-limits joins per forwarded address.
	sent   int
	client *http.Client
}

func newTarget(name, url string, seeded vars) *target {
	// base: links the server makes to itself compare as {base}.
	vs := vars{"base": strings.TrimRight(url, "/")}
	for k, v := range seeded {
		vs[k] = v
	}
	return &target{Name: name, URL: strings.TrimRight(url, "/"), vars: vs, client: &http.Client{
		// Redirects are part of what is compared.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// send runs one request against the target, keeps what it says to save,
// and returns the normalised answer. A transport failure is an error; a
// request that needs a var the server never handed out is observed as
// not run.
func (t *target) send(ctx context.Context, r request) (observed, error) {
	path, body, headers, err := t.prepare(r)
	var mv *missingVar
	if errors.As(err, &mv) {
		return observed{NotRun: mv.Error(), missing: mv.name}, nil
	}
	if err != nil {
		return observed{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if r.Body != "" {
		rd = strings.NewReader(body)
	} else if r.Cookie != "" && r.Method != http.MethodGet {
		rd = strings.NewReader("{}") // the page's body-less writes
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, t.URL+path, rd)
	if err != nil {
		return observed{}, fmt.Errorf("%s %s: %w", r.Method, path, err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	t.sent++
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.77.%d.%d", t.sent/250, t.sent%250+1))
	resp, err := t.client.Do(req)
	if err != nil {
		return observed{}, fmt.Errorf("%s %s: %w", r.Method, path, err)
	}
	defer resp.Body.Close()
	raw, err := readBody(resp, r.Stream)
	if err != nil {
		return observed{}, fmt.Errorf("%s %s: read the answer: %w", r.Method, path, err)
	}
	t.save(r.Save, resp.Header.Get("Content-Type"), raw)
	return newObserved(resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Location"), raw, t.vars), nil
}

// prepare fills the placeholders of a request.
func (t *target) prepare(r request) (path, body string, headers map[string]string, err error) {
	if path, err = fill(r.Path, t.vars); err != nil {
		return "", "", nil, err
	}
	if body, err = fill(r.Body, t.vars); err != nil {
		return "", "", nil, err
	}
	headers = map[string]string{}
	if r.Body != "" {
		headers["Content-Type"] = "application/json"
		if r.Type != "" {
			headers["Content-Type"] = r.Type
		}
	}
	if r.Bearer != "" {
		tok, err := fill("{"+r.Bearer+"}", t.vars)
		if err != nil {
			return "", "", nil, err
		}
		headers["Authorization"] = "Bearer " + tok
	}
	if r.Cookie != "" {
		tok, err := fill("{"+r.Cookie+"}", t.vars)
		if err != nil {
			return "", "", nil, err
		}
		headers["Cookie"] = "letagents_session=" + tok
		// As the room page sends them: from the server's own origin, and
		// JSON (ours refuses cookie-signed writes that are not, docs/api.md,
		// Cross-site requests).
		headers["Origin"] = t.vars["base"]
		headers["Content-Type"] = "application/json"
	}
	for k, v := range r.Header {
		if headers[k], err = fill(v, t.vars); err != nil {
			return "", "", nil, err
		}
	}
	return path, body, headers, nil
}

// readBody reads a whole answer, or the first event of a stream: the
// stream's first bytes up to a blank line, cut at streamRead.
func readBody(resp *http.Response, stream bool) ([]byte, error) {
	if !stream || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return io.ReadAll(io.LimitReader(resp.Body, maxBody))
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var b strings.Builder
	deadline := time.After(streamRead)
	for {
		select {
		case line, ok := <-lines:
			if !ok || line == "" {
				// Closing the body (deferred by the caller) ends the
				// scanning goroutine; drain what it may still send.
				go func() {
					for range lines {
					}
				}()
				return []byte(b.String()), nil
			}
			b.WriteString(line + "\n")
		case <-deadline:
			go func() {
				for range lines {
				}
			}()
			return []byte(b.String()), nil
		}
	}
}

// save keeps the values a request asked for. A value that is not there is
// simply not kept: the requests that need it will not run on this server.
func (t *target) save(paths map[string]string, contentType string, raw []byte) {
	if len(paths) == 0 || bodyKind(contentType, raw) != kindJSON {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	for name, path := range paths {
		if s, ok := lookup(v, path); ok {
			t.vars[name] = s
		}
	}
}

// lookup follows a dotted path ("messages.0.id") into a decoded JSON
// value and returns the scalar there as a string.
func lookup(v any, path string) (string, bool) {
	for _, part := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			v = c[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return "", false
			}
			v = c[i]
		default:
			return "", false
		}
	}
	switch s := v.(type) {
	case string:
		return s, s != ""
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64), true
	}
	return "", false
}
