package liveness_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// startPollContainer builds functions/poll and runs it as a container
// would (a plain server, PORT=0) on dbURL. It returns the URL the server
// logged, and kill, which SIGKILLs the process (no drain, no closing of
// its delivery connections) and reaps it.
func startPollContainer(t *testing.T, dbURL string) (url string, kill func()) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool to build functions/poll: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "poll")
	build := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, "github.com/letagents/letagents-go/functions/poll")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build functions/poll: %v\n%s", err, out)
	}
	// Only what the server needs: nothing from this process's environment
	// (AWS_LAMBDA_RUNTIME_API would switch it to Lambda mode).
	cmd := exec.Command(bin)
	cmd.Env = []string{"DB_URL=" + dbURL, "PORT=0", "LOG_LEVEL=info", "LETAGENTS_REPO_ACCESS=open"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	var logged []string
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "poll server listening" && line.URL != "" {
				urls <- line.URL
				continue
			}
			logged = append(logged, sc.Text())
		}
	}()
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-readDone // the pipe must be drained before Wait closes it
			_ = cmd.Wait()
			if t.Failed() && len(logged) > 0 {
				t.Logf("poll container stderr:\n%s", strings.Join(logged, "\n"))
			}
		})
	}
	t.Cleanup(kill)
	return testwait.Recv(t, "the poll container to log its URL", urls), kill
}

// Killing a poll container's process leaves no agent shown as connected
// once its delivery lease runs out: the lease, not the process, decides,
// and the sweeper then announces the outage.
func TestKilledPollContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	w := storetest.Register(t, e.store, "containers", "Sleeper", letagents.SessionWorker, time.Now().Truncate(time.Millisecond))
	base, kill := startPollContainer(t, e.db.URL)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/rooms/containers/messages/poll?after=msg_0&timeout=60000", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.OwnerToken)
	req.Header.Set(wire.SessionIDHeader, letagents.WireID(letagents.AgentSessionPrefix, w.ID))
	req.Header.Set(wire.SessionTokenHeader, w.Token)
	answered := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		resp.Body.Close()
		answered <- "status " + strconv.Itoa(resp.StatusCode)
	}()

	testwait.Until(t, "the parked poll to show as an open delivery connection", func() bool {
		a, err := e.store.AgentSession(ctx, "containers", w.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-answered:
			t.Fatalf("the poll answered (%s) instead of parking", got)
		default:
		}
		return a.OpenConnections == 1
	})
	kill()
	killed := time.Now()
	testwait.Recv(t, "the killed container's connection to drop", answered)

	// Right now the dead process's row still counts: nothing closed it.
	a, err := e.store.AgentSession(ctx, "containers", w.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if a.OpenConnections != 1 || !a.Reachable(time.Now()) || !a.LastDisconnectedAt.IsZero() {
		t.Errorf("just after the kill: %d open connections, reachable %v, disconnected %v; want the stale lease still counted",
			a.OpenConnections, a.Reachable(time.Now()), a.LastDisconnectedAt)
	}
	// Once the lease has run out, nobody shows it as connected.
	after := killed.Add(letagents.DeliveryLease + time.Second)
	if a, err = e.store.AgentSession(ctx, "containers", w.ID, after); err != nil {
		t.Fatal(err)
	}
	if a.OpenConnections != 0 || a.Reachable(after) {
		t.Errorf("a lease after the kill: %d open connections, reachable %v; want 0, not reachable", a.OpenConnections, a.Reachable(after))
	}
	sessions, err := e.store.AgentSessions(ctx, "containers", letagents.SessionWorker, after)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		if s.Reachable(after) {
			t.Errorf("%s is still shown as connected a lease after its poll container died", s.ActorLabel)
		}
	}

	// The outage runs from the lease's end: announced once the grace has
	// passed since then.
	e.sweep(t, after, 0, 0)
	e.sweep(t, killed.Add(grace+letagents.DeliveryLease), 1, 0)
	got := e.notices(t, "containers", "agent_liveness:offline:")
	if len(got) != 1 || !strings.HasPrefix(got[0].text, "[status] Sleeper's message channel has been unreachable for ") {
		t.Errorf("notices = %q, want one offline notice for Sleeper", got)
	}
}
