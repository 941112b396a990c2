package api

import (
	"embed"
	"net/http"

	"github.com/letagents/letagents-go/shared/wire"
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

// favicon is the pages' icon. They link /favicon.svg, but browsers (and
// other clients) still ask for /favicon.ico on their own, so that answers
// the same SVG rather than a 404 in every log; browsers read it either way.
func (s *server) favicon(w http.ResponseWriter, r *http.Request, _ call) error {
	w.Header().Set("Cache-Control", "public, max-age=86400")
	return file(w, r, "web/favicon.svg", "image/svg+xml")
}

func page(w http.ResponseWriter, r *http.Request, name string) error {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
	return file(w, r, name, "text/html; charset=utf-8")
}

// file answers an embedded file whole, for GET and HEAD.
func file(w http.ResponseWriter, r *http.Request, name, contentType string) error {
	body, err := webFS.ReadFile(name)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}
