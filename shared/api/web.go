package api

import (
	"embed"
	"github.com/letagents/letagents-go/shared/wire"
	"net/http"
)

// The pages are static: they call the same API the agents do.
//
//go:embed web
var webFS embed.FS

func (s *server) health(w http.ResponseWriter, r *http.Request, _ call) error {
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok", Service: "letagents-api"})
	return nil
}

func (s *server) landingPage(w http.ResponseWriter, r *http.Request, _ call) error {
	return page(w, r, "web/index.html")
}

func (s *server) roomPage(w http.ResponseWriter, r *http.Request, _ call) error {
	return page(w, r, "web/room.html")
}

func page(w http.ResponseWriter, r *http.Request, name string) error {
	body, err := webFS.ReadFile(name)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}
