package runnerproc_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/localdev/runnerproc"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// TestStartServesAndLogs starts the runner as the cost model does, asks
// it something, and reads the request's line in its log: the line the
// cost model counts (method, path, status, function, duration, bytes).
func TestStartServesAndLogs(t *testing.T) {
	log := &testwait.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a build on a busy machine
	defer cancel()
	p, err := runnerproc.Start(ctx, []string{"DB_URL=" + pgtest.New(t).URL, "LOG_LEVEL=info"}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || p.Pool == "" {
		t.Errorf("URL %q, pool %q: want a loopback URL and the pool's description", p.URL, p.Pool)
	}
	resp, err := http.Get(p.URL + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/health: %d %s", resp.StatusCode, body)
	}
	testwait.Until(t, "the runner to log the request", func() bool { return strings.Contains(log.String(), `"path":"/api/health"`) })
	for line := range strings.Lines(log.String()) {
		var l struct {
			Msg, Method, Path, Function string
			Status                      int
			Duration, Bytes             int64
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Path != "/api/health" {
			continue
		}
		if l.Msg != "request" || l.Method != http.MethodGet || l.Status != http.StatusOK || l.Function != "web" ||
			l.Duration <= 0 || l.Bytes != int64(len(body)) {
			t.Errorf("logged %s, want the request: GET, 200, web, a duration in ns, %d bytes", line, len(body))
		}
	}
}
