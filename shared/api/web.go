package api

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"io/fs"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/markdown"
	"github.com/letagents/letagents-go/shared/wire"
)

// The pages are static: they call the same API the agents do.
//
//go:embed web
var webFS embed.FS

// webPage is a page as served: its HTML and its Content-Security-Policy.
type webPage struct {
	body []byte
	csp  string
}

// roomHTML is room.html with the stylesheet of highlighted code added to
// its head: shared/markdown writes the class names, so it owns their CSS.
var roomHTML = sync.OnceValues(func() (webPage, error) {
	body, err := webFS.ReadFile("web/room.html")
	if err != nil {
		return webPage{}, err
	}
	style := []byte("<style>\n" + markdown.CSS() + "</style>\n</head>")
	return newPage(bytes.Replace(body, []byte("</head>"), style, 1)), nil
})

var landingHTML = sync.OnceValues(func() (webPage, error) {
	body, err := webFS.ReadFile("web/index.html")
	if err != nil {
		return webPage{}, err
	}
	return newPage(body), nil
})

// newPage is body served under a CSP that runs only the scripts of /js/,
// never an inline one (a message's html, sanitised by the server, could
// not run one even if a sanitiser bug let it through), and applies only
// the page's own stylesheets, each named by its hash: no style attribute
// or <style> that got into the page applies either. Scripts still set
// styles through the DOM (element.style), which a CSP does not govern.
func newPage(body []byte) webPage {
	styles := []string{"'self'"}
	for _, m := range styleElement.FindAllSubmatch(body, -1) {
		sum := sha256.Sum256(m[1])
		styles = append(styles, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return webPage{body: body, csp: "default-src 'self'; style-src " + strings.Join(styles, " ") + "; script-src 'self'"}
}

// styleElement is a page's own stylesheet, <style> without attributes.
var styleElement = regexp.MustCompile(`(?s)<style>(.*?)</style>`)

func (s *server) health(w http.ResponseWriter, r *http.Request, _ call) error {
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok", Service: "letagents-api", Version: buildVersion()})
	return nil
}

// buildVersion is the build the health check reports, so that
// `letagents doctor` can say which server answers: the module's version
// when built from a tagged module, else the commit (with -modified for an
// uncommitted tree), else "devel".
var buildVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return "devel"
	case modified:
		return rev + "-modified"
	}
	return rev
})

func (s *server) landingPage(w http.ResponseWriter, r *http.Request, _ call) error {
	p, err := landingHTML()
	if err != nil {
		return err
	}
	return p.serve(w, r)
}

func (s *server) roomPage(w http.ResponseWriter, r *http.Request, _ call) error {
	p, err := roomHTML()
	if err != nil {
		return err
	}
	return p.serve(w, r)
}

// script answers one of the pages' scripts (web/js): their ES modules
// and the theme script the room page's head runs before the first paint. They change
// with the binary, so, like the pages, they are revalidated (no-cache):
// a page and its modules never come from two versions.
func (s *server) script(w http.ResponseWriter, r *http.Request, c call) error {
	name := c.ps["file"]
	if !scriptName.MatchString(name) {
		return letagents.Errorf(letagents.NotFound, "no script %q", name)
	}
	body, err := webFS.ReadFile("web/js/" + name)
	if errors.Is(err, fs.ErrNotExist) {
		return letagents.Errorf(letagents.NotFound, "no script %q", name)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	return file(w, r, body, "text/javascript; charset=utf-8")
}

// scriptName is a file of web/js: no directories, no test files.
var scriptName = regexp.MustCompile(`^[a-z][a-z0-9-]*\.js$`)

// favicon is the pages' icon. They link /favicon.svg, but browsers (and
// other clients) still ask for /favicon.ico on their own, so that answers
// the same SVG rather than a 404 in every log; browsers read it either way.
func (s *server) favicon(w http.ResponseWriter, r *http.Request, _ call) error {
	body, err := webFS.ReadFile("web/favicon.svg")
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age=86400")
	return file(w, r, body, "image/svg+xml")
}

func (p webPage) serve(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", p.csp)
	return file(w, r, p.body, "text/html; charset=utf-8")
}

// file answers a file whole, for GET and HEAD.
func file(w http.ResponseWriter, r *http.Request, body []byte, contentType string) error {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}
