package browser_test

import (
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/letagents/letagents-go/shared/testwait"
)

// TestPageWeight holds the room page's weight over time (issue 27), as
// Chromium's network domain sees it. A cold visit downloads the page and
// its files; a warm one (a new visit of the same room, the browser's
// cache filled) asks for the page alone, answered 304, every script and
// the icon coming from the cache unasked. An idle room page that
// follows the stream asks for nothing: the window is two of the stream's
// own heartbeat events (30 s at the server's beat), and no request of
// any kind may start inside it.
func TestPageWeight(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "weight"
	r.join(room)
	for _, text := range []string{"first", "second", "third"} {
		r.send(room, "ada", text)
	}
	// Its own browser context, so its own cache: the first visit is cold
	// whatever other tests' runners left on the same port.
	b := newTab(t, chromedp.WithNewBrowserContext())
	n := watchNetwork(b)
	page := r.URL + "/in/" + roomPath(room)
	visit := func(what string) []request {
		t.Helper()
		b.open("about:blank")
		n.take()
		b.open(page)
		b.until(what+": the room live on its stream", streaming+` && document.getElementById("log").getAttribute("aria-busy") === "false"`)
		// The panel's first loads answer after the stream opens; the
		// agents' list is the last of them to draw (or say it is empty).
		b.until(what+": the panel loaded", `document.getElementById("agents").children.length > 0`)
		return n.take()
	}

	cold := visit("cold")
	warm := visit("warm")
	for _, v := range []struct {
		name string
		reqs []request
	}{{"cold", cold}, {"warm", warm}} {
		var files, api, fileBytes, apiBytes int
		for _, q := range v.reqs {
			if q.cached {
				continue
			}
			if q.static() {
				files, fileBytes = files+1, fileBytes+q.bytes
			} else {
				api, apiBytes = api+1, apiBytes+q.bytes
			}
		}
		t.Logf("%s visit: %d requests for the page and its files, %d bytes; %d API requests, %d bytes (the stream's open, %d requests in all)",
			v.name, files, fileBytes, api, apiBytes, len(v.reqs))
	}
	for _, q := range warm {
		switch {
		// Chromium reports a revalidated page as the cached 200; its bytes
		// off the network say it was a 304: headers, no body.
		case q.document && (q.bytes == 0 || q.bytes > 1024):
			t.Errorf("warm visit: the page took %d bytes (status %d), want a 304's headers alone", q.bytes, q.status)
		case q.static() && !q.document && !q.cached:
			t.Errorf("warm visit: %s went to the server (%d, %d bytes), want it from the cache", q.url, q.status, q.bytes)
		}
	}
	if !strings.Contains(strings.Join(urls(cold), " "), "/js/room.js?v=") {
		t.Errorf("cold visit asked for %v, want the page's versioned room.js among them", urls(cold))
	}

	// Idle: from a heartbeat after now to the one after next.
	n.forgetBeats()
	n.beat(t)
	n.take()
	n.beat(t)
	n.beat(t)
	if idle := n.take(); len(idle) > 0 {
		t.Errorf("an idle room page made %d requests between two heartbeats: %v", len(idle), urls(idle))
	}
}

// request is one request a tab made: its URL, whether it was the page
// itself, its status, the bytes it took off the network (headers and
// body), and whether the cache answered it without asking the server.
type request struct {
	url      string
	document bool
	status   int64
	bytes    int
	cached   bool
}

// static reports whether q is for the page or one of its files, not the
// API.
func (q request) static() bool {
	u, err := url.Parse(q.url)
	return err == nil && (q.document || strings.HasPrefix(u.Path, "/js/") || strings.HasPrefix(u.Path, "/favicon."))
}

func urls(reqs []request) []string {
	out := make([]string, len(reqs))
	for i, q := range reqs {
		out[i] = q.url
	}
	return out
}

// netLog records a tab's requests and the heartbeat events of its event
// streams, from Chromium's network domain.
type netLog struct {
	mu    sync.Mutex
	reqs  []*request
	byID  map[network.RequestID]*request
	beats chan struct{}
}

func watchNetwork(b *tab) *netLog {
	b.t.Helper()
	n := &netLog{byID: map[network.RequestID]*request{}, beats: make(chan struct{}, 64)}
	err := chromedp.Listen(b.ctx, func(ev any) {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			q := &request{url: e.Request.URL, document: e.Type == network.ResourceTypeDocument}
			n.reqs = append(n.reqs, q)
			n.byID[e.RequestID] = q
		case *network.EventRequestServedFromCache:
			if q := n.byID[e.RequestID]; q != nil {
				q.cached = true
			}
		case *network.EventResponseReceived:
			if q := n.byID[e.RequestID]; q != nil {
				q.status = e.Response.Status
				q.cached = q.cached || e.Response.FromDiskCache || e.Response.FromPrefetchCache
			}
		case *network.EventLoadingFinished:
			if q := n.byID[e.RequestID]; q != nil {
				q.bytes = int(e.EncodedDataLength)
			}
		case *network.EventEventSourceMessageReceived:
			if e.EventName == "heartbeat" {
				select {
				case n.beats <- struct{}{}:
				default:
				}
			}
		}
	})
	if err != nil {
		b.t.Fatalf("listen to the network: %v", err)
	}
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		b.t.Fatalf("enable the network domain: %v", err)
	}
	return n
}

// take answers the requests since the last take, as they stand now.
func (n *netLog) take() []request {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]request, len(n.reqs))
	for i, q := range n.reqs {
		out[i] = *q
	}
	n.reqs = nil
	return out
}

// forgetBeats drops the heartbeats seen so far.
func (n *netLog) forgetBeats() {
	for {
		select {
		case <-n.beats:
		default:
			return
		}
	}
}

// beat waits for the next heartbeat event of the tab's streams.
func (n *netLog) beat(t *testing.T) {
	t.Helper()
	testwait.Recv(t, "a heartbeat event", n.beats)
}
