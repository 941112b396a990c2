package api

import (
	"bytes"
	"embed"
	"net/http"
	"sync"

	"github.com/letagents/letagents-go/shared/markdown"
	"github.com/letagents/letagents-go/shared/wire"
)

// The pages are static: they call the same API the agents do.
//
//go:embed web
var webFS embed.FS

// roomHTML is room.html with the stylesheet of highlighted code added to
// its head: shared/markdown writes the class names, so it owns their CSS.
var roomHTML = sync.OnceValues(func() ([]byte, error) {
	body, err := webFS.ReadFile("web/room.html")
	if err != nil {
		return nil, err
	}
	style := []byte("<style>\n" + markdown.CSS() + "</style>\n</head>")
	return bytes.Replace(body, []byte("</head>"), style, 1), nil
})

func (s *server) health(w http.ResponseWriter, r *http.Request, _ call) error {
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok", Service: "letagents-api"})
	return nil
}

func (s *server) landingPage(w http.ResponseWriter, r *http.Request, _ call) error {
	body, err := webFS.ReadFile("web/index.html")
	if err != nil {
		return err
	}
	return page(w, r, body)
}

func (s *server) roomPage(w http.ResponseWriter, r *http.Request, _ call) error {
	body, err := roomHTML()
	if err != nil {
		return err
	}
	return page(w, r, body)
}

func page(w http.ResponseWriter, r *http.Request, body []byte) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}
