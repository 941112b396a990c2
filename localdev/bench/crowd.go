package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// pollFunc makes one parked request and returns when its answer has been
// read: ok is false for an answer that brought nothing (a timeout), which
// the waiter does not report but simply repeats.
type pollFunc func(ctx context.Context) (at time.Time, ok bool, err error)

type arrival struct {
	id  int
	at  time.Time
	err error
}

// crowd is n waiters, each parking a request, reporting when its answer
// arrives, and parking again only when told to.
type crowd struct {
	wg       sync.WaitGroup
	cancel   context.CancelFunc
	arrivals chan arrival
	repark   []chan struct{}
}

func startCrowd(ctx context.Context, n int, mk func(i int) pollFunc) *crowd {
	ctx, cancel := context.WithCancel(ctx)
	c := &crowd{cancel: cancel, arrivals: make(chan arrival, n), repark: make([]chan struct{}, n)}
	for i := range n {
		c.repark[i] = make(chan struct{}, 1)
		poll := mk(i)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for {
				at, ok, err := poll(ctx)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					c.arrivals <- arrival{id: i, err: err}
					return
				}
				if !ok {
					continue
				}
				c.arrivals <- arrival{id: i, at: at}
				select {
				case <-c.repark[i]:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return c
}

// collect waits for want answers and returns their latencies from t0.
func (c *crowd) collect(ctx context.Context, want int, t0 time.Time, timeout time.Duration) (dist, []int, error) {
	d := make(dist, 0, want)
	ids := make([]int, 0, want)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(d) < want {
		select {
		case a := <-c.arrivals:
			if a.err != nil {
				return d, ids, fmt.Errorf("waiter %d: %w", a.id, a.err)
			}
			d = append(d, a.at.Sub(t0))
			ids = append(ids, a.id)
		case <-timer.C:
			return d, ids, fmt.Errorf("%d of %d waiters answered within %s: %w", len(d), want, timeout, errTimeout)
		case <-ctx.Done():
			return d, ids, ctx.Err()
		}
	}
	return d, ids, nil
}

// release lets the waiters ids park again.
func (c *crowd) release(ids []int) {
	for _, i := range ids {
		select {
		case c.repark[i] <- struct{}{}:
		default:
		}
	}
}

// stop cancels every request and waits for the waiters to leave.
func (c *crowd) stop() {
	c.cancel()
	c.wg.Wait()
}

// waitFor polls check until it has reported ready three times in a row,
// 2 ms apart, so requests that were counted have also settled.
func waitFor(ctx context.Context, what string, timeout time.Duration, check func() (ready bool, state string, err error)) error {
	deadline := time.Now().Add(timeout)
	stable := 0
	for stable < 3 {
		ready, state, err := check()
		if err != nil {
			return err
		}
		if ready {
			stable++
		} else {
			stable = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached after %s (%s): %w", what, timeout, state, errTimeout)
		}
		if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// pollRoom returns a pollFunc long-polling room on base from cursor on
// with headers h (nil: none), moving the cursor past what each answer
// brings.
func pollRoom(client *http.Client, base, room string, cursor int64, h http.Header) pollFunc {
	return func(ctx context.Context) (time.Time, bool, error) {
		u := fmt.Sprintf("%s/rooms/%s/messages/poll?after=%s&timeout=60000", base, url.PathEscape(room), letagents.MessageID(cursor))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return time.Time{}, false, err
		}
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return time.Time{}, false, err
		}
		body, err := io.ReadAll(resp.Body)
		at := time.Now()
		resp.Body.Close()
		if err != nil {
			return at, false, err
		}
		if resp.StatusCode != http.StatusOK {
			return at, false, fmt.Errorf("poll %s: %s: %s", room, resp.Status, strings.TrimSpace(string(body)))
		}
		var page struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return at, false, fmt.Errorf("poll %s: %w", room, err)
		}
		if len(page.Messages) == 0 {
			return at, false, nil
		}
		seq, err := letagents.ParseMessageID(page.Messages[len(page.Messages)-1].ID)
		if err != nil {
			return at, false, err
		}
		cursor = seq
		return at, true, nil
	}
}

// streamRoom returns a pollFunc that opens an event stream of room on base
// (once, after cursor) and returns each time a message event arrives.
func streamRoom(client *http.Client, base, room string, cursor int64) pollFunc {
	return streamEvents(client, fmt.Sprintf("%s/rooms/%s/messages/stream?after=%s", base, url.PathEscape(room), letagents.MessageID(cursor)))
}

// streamEvents returns a pollFunc that opens the event stream u on its
// first call and returns each time an event's data line has been read.
func streamEvents(client *http.Client, u string) pollFunc {
	var br *bufio.Reader
	return func(ctx context.Context) (time.Time, bool, error) {
		if br == nil {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return time.Time{}, false, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return time.Time{}, false, err
			}
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return time.Time{}, false, fmt.Errorf("stream %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
			}
			// The request's context is the crowd's: stopping it closes the body.
			br = bufio.NewReader(resp.Body)
		}
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return time.Time{}, false, err
			}
			if strings.HasPrefix(line, "data:") {
				return time.Now(), true, nil
			}
		}
	}
}

// send posts one message over HTTP.
func send(ctx context.Context, client *http.Client, base, room, text string) error {
	return sendWith(ctx, client, base, room, text, nil)
}

// sendWith is send with the request's headers besides its content type
// (credentials, say).
func sendWith(ctx context.Context, client *http.Client, base, room, text string, hdr http.Header) error {
	body, _ := json.Marshal(map[string]string{"sender": "bench", "text": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rooms/"+url.PathEscape(room)+"/messages", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("send to %s: %s: %s", room, resp.Status, strings.TrimSpace(string(out)))
	}
	return nil
}

// readAll reads and closes an answer, failing on a status other than 200.
func readAll(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return body, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("%s %s: %s: %s", resp.Request.Method, resp.Request.URL.Path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
