package api

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
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
	etag string
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
	return newPage(bytes.Replace(body, []byte("</head>"), style, 1))
})

var landingHTML = sync.OnceValues(func() (webPage, error) {
	body, err := webFS.ReadFile("web/index.html")
	if err != nil {
		return webPage{}, err
	}
	return newPage(body)
})

// newPage is body served under a CSP that runs only the scripts of /js/,
// never an inline one (a message's html, sanitised by the server, could
// not run one even if a sanitiser bug let it through), and applies only
// the page's own stylesheets, each named by its hash: no style attribute
// or <style> that got into the page applies either. Scripts still set
// styles through the DOM (element.style), which a CSP does not govern.
// The files the page links are linked by their versioned URLs (assets),
// and the page's ETag is its hash, so a page whose files changed has a
// new ETag too.
func newPage(body []byte) (webPage, error) {
	all, err := webAssets()
	if err != nil {
		return webPage{}, err
	}
	body, err = withUI(body)
	if err != nil {
		return webPage{}, err
	}
	body = assetLink.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := assetLink.FindSubmatch(m)
		a, ok := all[string(sub[2])]
		if !ok {
			return m
		}
		return []byte(string(sub[1]) + `="` + a.url + `"`)
	})
	styles := []string{"'self'"}
	for _, m := range styleElement.FindAllSubmatch(body, -1) {
		sum := sha256.Sum256(m[1])
		styles = append(styles, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return webPage{body: body, etag: etagOf(body), csp: "default-src 'self'; style-src " + strings.Join(styles, " ") + "; script-src 'self'"}, nil
}

// withUI is body with the design system (web/ui.css) as its first
// stylesheet, before the page's own, which build on its tokens and may
// override its parts. One file for every page keeps them alike; put in
// the page rather than linked, it costs no request.
func withUI(body []byte) ([]byte, error) {
	css, err := webFS.ReadFile("web/ui.css")
	if err != nil {
		return nil, err
	}
	at := bytes.Index(body, []byte("<style>"))
	if at < 0 {
		at = bytes.Index(body, []byte("</head>"))
	}
	if at < 0 {
		return nil, fmt.Errorf("web: a page without a head")
	}
	return slices.Concat(body[:at], []byte("<style>\n"), css, []byte("</style>\n"), body[at:]), nil
}

// assetLink is a page's link to one of its files: a script or the icon.
var assetLink = regexp.MustCompile(`(src|href)="/(js/[a-z][a-z0-9-]*\.js|favicon\.svg)"`)

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
// and the theme script the room page's head runs before the first paint.
func (s *server) script(w http.ResponseWriter, r *http.Request, c call) error {
	name := c.ps["file"]
	all, err := webAssets()
	if err != nil {
		return err
	}
	a, ok := all["js/"+name]
	if !ok {
		return letagents.Errorf(letagents.NotFound, "no script %q", name)
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	return a.serve(w, r)
}

// favicon is the pages' icon. They link /favicon.svg, but browsers (and
// other clients) still ask for /favicon.ico on their own, so that answers
// the same SVG rather than a 404 in every log; browsers read it either way.
func (s *server) favicon(w http.ResponseWriter, r *http.Request, _ call) error {
	all, err := webAssets()
	if err != nil {
		return err
	}
	return all["favicon.svg"].serve(w, r)
}

// asset is a file the pages link (a script, the icon) as served: its
// body, with a module's imports rewritten to the versioned URLs of the
// modules it imports, and url, its versioned URL, /path?v=hash, where
// hash is that of the body. A module's body names the versions of its
// imports, so a change to any module changes the URL of every module that
// imports it, up to the page's, and a page never runs modules of two
// versions.
type asset struct {
	body        []byte
	contentType string
	hash        string
	url         string
}

// webAssets are the files the pages link, hashed once when first asked:
// no build step names them.
var webAssets = sync.OnceValues(func() (map[string]asset, error) { return assetsOf(webFS) })

// assetsOf are the files the pages of fsys link, by path below web/
// (js/room.js, favicon.svg).
func assetsOf(fsys fs.FS) (map[string]asset, error) {
	all := map[string]asset{}
	icon, err := fs.ReadFile(fsys, "web/favicon.svg")
	if err != nil {
		return nil, err
	}
	all["favicon.svg"] = newAsset("/favicon.svg", icon, "image/svg+xml")
	files, err := fs.Glob(fsys, "web/js/*.js")
	if err != nil {
		return nil, err
	}
	src := map[string][]byte{}
	for _, f := range files {
		name := strings.TrimPrefix(f, "web/js/")
		if !scriptName.MatchString(name) {
			continue
		}
		if src[name], err = fs.ReadFile(fsys, f); err != nil {
			return nil, err
		}
	}
	// Each module is hashed after the modules it imports (depth first);
	// an import cycle could not be, and fails here, at the first page.
	const visiting = "visiting"
	var visit func(name string) error
	visit = func(name string) error {
		key := "js/" + name
		if a, ok := all[key]; ok {
			if a.hash == visiting {
				return fmt.Errorf("web/js: an import cycle through %s", name)
			}
			return nil
		}
		body, ok := src[name]
		if !ok {
			return fmt.Errorf("web/js: %w: a module imports %s", fs.ErrNotExist, name)
		}
		all[key] = asset{hash: visiting}
		var failed error
		body = moduleImport.ReplaceAllFunc(body, func(m []byte) []byte {
			sub := moduleImport.FindSubmatch(m)
			dep := string(sub[2])
			if err := visit(dep); err != nil {
				failed = cmp.Or(failed, err)
				return m
			}
			return []byte(string(sub[1]) + "./" + dep + "?v=" + all["js/"+dep].hash + `"`)
		})
		if failed != nil {
			return failed
		}
		all[key] = newAsset("/js/"+name, body, "text/javascript; charset=utf-8")
		return nil
	}
	for name := range src {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// moduleImport is a module's static or dynamic import of a module beside
// it: from "./x.js", import "./x.js", import("./x.js").
var moduleImport = regexp.MustCompile(`((?:\bfrom|\bimport)\s*\(?\s*")\./([a-z][a-z0-9-]*\.js)"`)

// scriptName is a file of web/js: no directories, no test files.
var scriptName = regexp.MustCompile(`^[a-z][a-z0-9-]*\.js$`)

func newAsset(path string, body []byte, contentType string) asset {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:8])
	return asset{body: body, contentType: contentType, hash: hash, url: path + "?v=" + hash}
}

// serve answers the asset. Under its versioned URL it never changes, so
// browsers and caches keep it for a year without asking again; under any
// other (the bare path, or the version of another build, which a page
// open across a deploy may still ask for) it is revalidated each time,
// by its ETag.
func (a asset) serve(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Get("v") == a.hash {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	return file(w, r, a.body, a.contentType, `"`+a.hash+`"`)
}

// serve answers the page, revalidated on each visit (no-cache): a warm
// visit whose copy is current gets a 304 and no body.
func (p webPage) serve(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", p.csp)
	return file(w, r, p.body, "text/html; charset=utf-8", p.etag)
}

// etagOf is a strong ETag of body.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// file answers a file whole, for GET and HEAD, with its ETag: 304 Not
// Modified, without the body, when the request's If-None-Match names it.
func file(w http.ResponseWriter, r *http.Request, body []byte, contentType, etag string) error {
	w.Header().Set("ETag", etag)
	if noneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}

// noneMatch reports whether an If-None-Match header lists etag (compared
// weakly, as RFC 9110 says for this header) or is "*".
func noneMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
