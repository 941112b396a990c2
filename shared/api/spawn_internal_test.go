package api

import (
	"errors"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/testwait"
)

// A spawned goroutine's panic comes back to whoever waits for it, with
// the goroutine's stack; net/http's quiet abort comes back as itself.
func TestSpawnRaisesItsPanicOnTheWaiter(t *testing.T) {
	t.Parallel()
	var nilPanic *runtime.PanicNilError
	for _, tt := range []struct {
		name  string
		fn    func()
		check func(t *testing.T, raised any)
	}{
		{"returns", func() {}, func(t *testing.T, raised any) {
			if raised != nil {
				t.Errorf("wait raised %v; want nothing", raised)
			}
		}},
		{"panics", panicsOnItsOwn, func(t *testing.T, raised any) {
			p, ok := raised.(*goroutinePanic)
			if !ok {
				t.Fatalf("wait raised %T %v; want the goroutine's panic", raised, raised)
			}
			if s := p.String(); !strings.Contains(s, "boom") || !strings.Contains(s, "panicsOnItsOwn") {
				t.Errorf("raised %q; want the value and the goroutine's stack", s)
			}
		}},
		{"aborts the request", func() { panic(http.ErrAbortHandler) }, func(t *testing.T, raised any) {
			if raised != http.ErrAbortHandler {
				t.Errorf("wait raised %v; want http.ErrAbortHandler itself", raised)
			}
		}},
		{"panics with nil", func() { panic(nil) }, func(t *testing.T, raised any) {
			var err error
			if p, ok := raised.(*goroutinePanic); ok {
				err, _ = p.value.(error)
			}
			if !errors.As(err, &nilPanic) {
				t.Errorf("wait raised %v; want the goroutine's nil panic", raised)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			wait := spawn(func() { ran = true; tt.fn() })
			raised := func() (raised any) {
				defer func() { raised = recover() }()
				wait()
				return nil
			}()
			if !ran {
				t.Error("fn did not run")
			}
			tt.check(t, raised)
		})
	}
}

func panicsOnItsOwn() { panic("boom") }

// In a handler, a spawned goroutine's panic ends that request, as a
// panic of the handler does, and the server goes on serving.
func TestSpawnedPanicEndsOneRequest(t *testing.T) {
	t.Parallel()
	var logged testwait.Buffer
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			spawn(panicsOnItsOwn)()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ErrorLog = log.New(&logged, "", 0)
	srv.Start()
	defer srv.Close()
	if resp, err := srv.Client().Get(srv.URL + "/panic"); err == nil {
		resp.Body.Close()
		t.Errorf("the request whose goroutine panicked was answered %s; want its connection closed", resp.Status)
	}
	testwait.Until(t, "the panic logged with its goroutine's stack", func() bool {
		s := logged.String()
		return strings.Contains(s, "boom") && strings.Contains(s, "panicsOnItsOwn")
	})
	resp, err := srv.Client().Get(srv.URL + "/fine")
	if err != nil {
		t.Fatalf("the next request: %v; want the server still serving", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("the next request: %s; want 204", resp.Status)
	}
}
