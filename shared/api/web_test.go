package api_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/docs"
	"github.com/letagents/letagents-go/shared/api"
)

// TestRoomPageLoadsAreNotJoins pins issue 14: the room page reads the room
// with GET …/info, which no rate counts, so a dozen reloads a minute from
// one address all open the room and leave the join budget whole.
func TestRoomPageLoadsAreNotJoins(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil) // 10 joins a minute
	e.join(t, "team")       // one join spent
	for i := range 12 {
		e.call(t, http.MethodGet, "/in/team", "").want(t, 200, "")
		if r := e.call(t, http.MethodGet, "/rooms/team/info", "").want(t, 200, ""); r.str("room_id") != "team" {
			t.Fatalf("page load %d: info = %s", i+1, r.raw)
		}
	}
	for i := range 9 {
		e.call(t, http.MethodPost, fmt.Sprintf("/rooms/room-%d/join", i), "").want(t, 200, "")
	}
	wantRateLimited(t, e.call(t, http.MethodPost, "/rooms/one-more/join", ""), "room joins", "6")
}

// TestRoomInfo checks that GET …/info answers what a join answers, of a
// room that exists, and records nothing: no room, no admin.
func TestRoomInfo(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	e.gh.AddRepo("acme/app", false)
	e.gh.AddRepo("acme/secret", true)
	e.gh.Grant("acme/app", "bob", "admin")
	ann, bob := e.signIn(t, "ann"), e.signIn(t, "bob")
	code := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	e.join(t, "team") // anonymous: the room has no admin yet
	e.join(t, "github.com/acme/app")

	tests := []struct {
		name, token, room string
		status            int
		check             func(r reply) error
	}{
		{"invite room by code", "", code, 200, func(r reply) error {
			if r.str("room_id") != code || r.str("code") != code || r.obj["name"] != nil || r.str("display_name") == "" || r.str("role") != "participant" {
				return fmt.Errorf("want the invite room, its code and a display name")
			}
			return nil
		}},
		{"named room, signed in, never joined", ann, "team", 200, func(r reply) error {
			if r.str("name") != "team" || r.obj["code"] != nil || r.str("role") != "participant" || r.obj["authenticated"] != true {
				return fmt.Errorf("want the named room, ann a participant (info claims no admin)")
			}
			return nil
		}},
		{"repo room, anonymous", "", "github.com/acme/app", 200, func(r reply) error {
			g, _ := r.obj["git_room"].(map[string]any)
			repo, _ := g["repository"].(map[string]any)
			ref, _ := g["ref"].(map[string]any)
			if g["host"] != "github.com" || repo["owner"] != "acme" || repo["name"] != "app" || ref["type"] != "default_branch" || r.str("role") != "anonymous" {
				return fmt.Errorf("want git_room github.com acme/app on its default branch, role anonymous")
			}
			return nil
		}},
		{"repo room, its GitHub admin, never joined", bob, "github.com/acme/app", 200, func(r reply) error {
			if r.str("role") != "participant" {
				return fmt.Errorf("want participant: only a join makes a repository admin a room admin")
			}
			return nil
		}},
		{"no such room", "", "nobody-made-this", 404, nil},
		{"private repo room, anonymous", "", "github.com/acme/secret", 401, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r reply
			if tt.token == "" {
				r = e.call(t, http.MethodGet, "/rooms/"+tt.room+"/info", "")
			} else {
				r = e.as(t, tt.token, http.MethodGet, "/rooms/"+tt.room+"/info", "")
			}
			if r.status != tt.status {
				t.Fatalf("GET info = %d %s, want %d", r.status, r.raw, tt.status)
			}
			if tt.check != nil {
				if err := tt.check(r); err != nil {
					t.Errorf("%v; got %s", err, r.raw)
				}
			}
		})
	}
	// Reading made nothing: the unknown room is still unknown, and the
	// first signed-in join of team still makes its first admin.
	e.call(t, http.MethodGet, "/rooms/nobody-made-this/info", "").want(t, 404, "")
	if r := e.as(t, ann, http.MethodPost, "/rooms/team/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Errorf("ann's join after her info reads = %s, want role admin", r.raw)
	}
	if r := e.as(t, ann, http.MethodGet, "/rooms/team/info", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Errorf("ann's info after her join = %s, want role admin", r.raw)
	}
}

// TestSessionSaysWhetherSignInIsConfigured: the room page offers GitHub
// sign-in only where the server can do it.
func TestSessionSaysWhetherSignInIsConfigured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  func(testing.TB, map[string]string) *env
		want bool
	}{
		{"no GitHub app", newEnv, false},
		{"GitHub configured", newAuthEnv, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.env(t, nil).call(t, http.MethodGet, "/auth/session", "").want(t, 200, "")
			if r.obj["sign_in_configured"] != tt.want || r.obj["authenticated"] != false {
				t.Errorf("session = %s, want sign_in_configured %v", r.raw, tt.want)
			}
		})
	}
}

// TestFavicon: browsers ask for an icon on every page load; it is served,
// not a 404, under the path the pages link and the one browsers guess.
func TestFavicon(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, path := range []string{"/favicon.svg", "/favicon.ico"} {
		r := e.call(t, http.MethodGet, path, "").want(t, 200, "")
		if r.header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(r.raw, "<svg") {
			t.Errorf("GET %s = %s %.40q, want an SVG", path, r.header.Get("Content-Type"), r.raw)
		}
	}
	for _, path := range []string{"/", "/in/team"} {
		if p := e.call(t, http.MethodGet, path, "").want(t, 200, ""); !strings.Contains(p.raw, `<link rel="icon" href="/favicon.svg?v=`) {
			t.Errorf("GET %s does not link the icon", path)
		}
	}
}

// TestRoomPageStatic checks what the room page must keep, short of a
// browser: it opens rooms without joining, the message list stays a list
// inside <main>, and user text never goes through innerHTML except the
// server's sanitised html field.
func TestRoomPageStatic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	page := pageWithScripts(t, e, "/in/team")
	tests := []struct {
		what    string
		ok      bool
		because string
	}{
		{"reads the room with GET …/info", strings.Contains(page, "/info`"), "a page load must not spend a join"},
		{"has a <main>", strings.Contains(page, "<main"), "landmarks"},
		{"message list is an <ol> with no role", strings.Contains(page, `<ol id="log" class="log" aria-label="Messages"`), "a role on the <ol> drops its list semantics"},
		{"innerHTML only for m.html", strings.Count(page, "innerHTML") == 1 && strings.Contains(page, "body.innerHTML = m.html"), "untrusted text stays escaped"},
		{"one place new events arrive", strings.Contains(page, "function onEvent(type, data)"), "the event stream feeds it"},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("room page: want it %s (%s)", tt.what, tt.because)
		}
	}
}

// TestLandingPageSaysHowToInstall: the page that shows the MCP
// configuration ("command": "letagents") says how to get that command, in
// one go install of this module's mcp/letagents.
func TestLandingPageSaysHowToInstall(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module, _, _ := strings.Cut(strings.TrimPrefix(string(mod), "module "), "\n")
	want := "go install " + module + "/mcp/letagents@latest"
	if page := newEnv(t, nil).call(t, http.MethodGet, "/", "").want(t, 200, "").raw; !strings.Contains(page, want) {
		t.Errorf("the landing page does not say %q", want)
	}
}

// scriptRef finds the scripts a page or module loads: <script src> and
// static imports of the modules beside it.
var scriptRef = regexp.MustCompile(`<script[^>]* src="/js/([a-z0-9-]+\.js)(?:\?v=[0-9a-f]+)?"|from "\./([a-z0-9-]+\.js)(?:\?v=[0-9a-f]+)?"`)

// pageWithScripts is the page at path followed by every script it loads,
// directly or through imports, each as served.
func pageWithScripts(t *testing.T, e *env, path string) string {
	t.Helper()
	all := e.call(t, http.MethodGet, path, "").want(t, 200, "").raw
	seen := map[string]bool{}
	for i := 0; i < len(all); {
		m := scriptRef.FindStringSubmatchIndex(all[i:])
		if m == nil {
			break
		}
		name := all[i+m[2] : i+m[3]]
		if m[2] < 0 {
			name = all[i+m[4] : i+m[5]]
		}
		i += m[1]
		if !seen[name] {
			seen[name] = true
			all += "\n" + e.call(t, http.MethodGet, "/js/"+name, "").want(t, 200, "").raw
		}
	}
	if !seen["room.js"] {
		t.Fatalf("GET %s loads no /js/room.js", path)
	}
	return all
}

// TestPagesRunNoInlineScript walks every page the server answers (each
// GET route of the web group that answers HTML, from api.Routes(), so a
// new page is covered the day it is added): its CSP allows scripts of its
// own origin alone, and its HTML has no inline script, no inline event
// handler and no javascript: URL, which that CSP would refuse to run. Its
// styles: its own stylesheets, each allowed by its hash, and no other
// inline style ('unsafe-inline').
func TestPagesRunNoInlineScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	params := strings.NewReplacer("{room}", "team", "{file}", "room.js", "{doc}", "limits", "{owner}", "owner", "{repo}", "repo")
	pages := 0
	for _, rt := range api.Routes() {
		if rt.Group != api.GroupWeb || rt.Method != http.MethodGet {
			continue
		}
		path := params.Replace(rt.Pattern)
		r := e.call(t, http.MethodGet, path, "")
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			continue
		}
		pages++
		csp := map[string]string{}
		for _, d := range strings.Split(r.header.Get("Content-Security-Policy"), ";") {
			if f := strings.Fields(d); len(f) > 0 {
				csp[f[0]] = strings.Join(f[1:], " ")
			}
		}
		if csp["script-src"] != "'self'" || csp["default-src"] != "'self'" {
			t.Errorf("GET %s: CSP %q, want default-src and script-src 'self' alone", path, r.header.Get("Content-Security-Policy"))
		}
		styles := strings.Fields(csp["style-src"])
		if slices.Contains(styles, "'unsafe-inline'") || !slices.Contains(styles, "'self'") {
			t.Errorf("GET %s: style-src %q, want 'self' and the page's stylesheets by hash, no 'unsafe-inline'", path, csp["style-src"])
		}
		for _, style := range styleTag.FindAllStringSubmatch(r.raw, -1) {
			sum := sha256.Sum256([]byte(style[1]))
			if hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !slices.Contains(styles, hash) {
				t.Errorf("GET %s: a <style> of the page (%.40q…) is not in style-src %q: it would not apply", path, style[1], csp["style-src"])
			}
		}
		if bad := styleAttr.FindAllString(r.raw, -1); len(bad) > 0 {
			t.Errorf("GET %s: style attributes %q, which the CSP refuses", path, bad)
		}
		for _, tag := range scriptTag.FindAllStringSubmatch(r.raw, -1) {
			if !strings.Contains(tag[1], ` src="/js/`) || strings.TrimSpace(tag[2]) != "" {
				t.Errorf("GET %s: inline script %q, want only <script src=\"/js/…\"></script>", path, tag[0])
			}
		}
		if bad := inlineHandler.FindAllString(r.raw, -1); len(bad) > 0 {
			t.Errorf("GET %s: inline event handlers or javascript: URLs %q", path, bad)
		}
	}
	if pages < 2 {
		t.Errorf("%d routes answer HTML, want at least the landing and room pages", pages)
	}
}

var (
	scriptTag     = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	styleTag      = regexp.MustCompile(`(?is)<style\b[^>]*>(.*?)</style>`)
	styleAttr     = regexp.MustCompile(`(?i)<[a-z][^>]*\sstyle\s*=[^>]*>`)
	inlineHandler = regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+\s*=[^>]*>|javascript:`)
)

// TestScriptsServed: /js/ serves the pages' scripts alone, as JavaScript.
func TestScriptsServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/js/room.js", 200},
		{"/js/landing.js", 200},
		{"/js/theme.js", 200},
		{"/js/events.js", 200},
		{"/js/no-such.js", 404},
		{"/js/room.html", 404},
		{"/js/..%2Froom.html", 404},
		{"/js/reducer.test.js", 404},
	} {
		got := e.call(t, http.MethodGet, tt.path, "")
		if got.status != tt.want {
			t.Errorf("GET %s = %d, want %d", tt.path, got.status, tt.want)
			continue
		}
		if ct := got.header.Get("Content-Type"); tt.want == 200 && ct != "text/javascript; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q, want text/javascript", tt.path, ct)
		}
	}
}

// TestDocsPages: /docs lists every document of the reference (package
// docs, embedded), /docs/{doc} shows one rendered by shared/markdown, its
// links to the others pointing at their pages, and a name that is no
// document is a 404 in JSON.
func TestDocsPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	all, err := docs.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 {
		t.Fatalf("docs.All() = %d documents, want the reference's dozen", len(all))
	}
	index := e.call(t, http.MethodGet, "/docs", "").want(t, 200, "").raw
	for _, d := range all {
		if link := `<a href="/docs/` + d.Name + `">`; !strings.Contains(index, link) {
			t.Errorf("GET /docs lacks %s", link)
		}
	}
	for _, tt := range []struct{ path, want string }{
		{"/docs/limits", "<h1>Limits</h1>"},
		{"/docs/limits", `<a href="/docs/limits" aria-current="page">Limits</a>`},
		{"/docs/mcp", "<h1>Agents: the <code>letagents</code> MCP server</h1>"},
		{"/docs/api", `<a href="/docs/limits">`},
		{"/docs/limits", "<table>"},
	} {
		if got := e.call(t, http.MethodGet, tt.path, "").want(t, 200, "").raw; !strings.Contains(got, tt.want) {
			t.Errorf("GET %s lacks %q", tt.path, tt.want)
		}
	}
	for _, path := range []string{"/docs/nope", "/docs/limits.md", "/docs/..%2FREADME"} {
		e.call(t, http.MethodGet, path, "").want(t, 404, "")
	}
}

// TestPagesCached holds the pages' caching (issue 27): a page is
// revalidated on every visit by its strong ETag, so a warm visit is a 304
// with no body; every file it loads (its scripts, the modules they
// import, its icon) is linked by a versioned URL that answers immutable,
// for a year; the same file under its bare path, or under a version this
// build does not have (a page open across a deploy), answers too, but
// revalidated.
func TestPagesCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const immutable, revalidate = "public, max-age=31536000, immutable", "no-cache"
	ifNoneMatch := func(etag string) http.Header { return http.Header{"If-None-Match": {etag}} }
	// check fetches path (with h) and wants status and Cache-Control cc,
	// a strong ETag, and no body on a 304; it answers the reply.
	check := func(t *testing.T, path string, h http.Header, status int, cc string) reply {
		t.Helper()
		r := e.callWith(t.Context(), t, http.MethodGet, path, "", h)
		etag := r.header.Get("ETag")
		switch {
		case r.status != status:
			t.Errorf("GET %s (%v) = %d, want %d", path, h, r.status, status)
		case r.header.Get("Cache-Control") != cc:
			t.Errorf("GET %s: Cache-Control %q, want %q", path, r.header.Get("Cache-Control"), cc)
		case !strings.HasPrefix(etag, `"`) || len(etag) < 3:
			t.Errorf("GET %s: ETag %q, want a strong one", path, etag)
		case status == http.StatusNotModified && r.raw != "":
			t.Errorf("GET %s: a 304 with a body of %d bytes", path, len(r.raw))
		}
		return r
	}
	for _, page := range []string{"/", "/in/team", "/in/github.com/acme/app", "/docs", "/docs/limits"} {
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			r := check(t, page, nil, 200, revalidate)
			etag := r.header.Get("ETag")
			check(t, page, ifNoneMatch(etag), http.StatusNotModified, revalidate)
			check(t, page, ifNoneMatch(`"other", `+etag), http.StatusNotModified, revalidate)
			check(t, page, ifNoneMatch(`"other"`), 200, revalidate)

			// Every file the page loads, through its imports too.
			urls := []string{}
			for _, m := range pageAsset.FindAllStringSubmatch(r.raw, -1) {
				urls = append(urls, m[1])
			}
			if len(urls) < 2 {
				t.Fatalf("GET %s links %q, want its script and icon by versioned URL", page, urls)
			}
			seen := map[string]bool{}
			for len(urls) > 0 {
				u := urls[0]
				urls = urls[1:]
				if seen[u] {
					continue
				}
				seen[u] = true
				a := check(t, u, nil, 200, immutable)
				etag := a.header.Get("ETag")
				check(t, u, ifNoneMatch(etag), http.StatusNotModified, immutable)
				bare, _, _ := strings.Cut(u, "?")
				if b := check(t, bare, nil, 200, revalidate); b.raw != a.raw || b.header.Get("ETag") != etag {
					t.Errorf("GET %s answers other than GET %s", bare, u)
				}
				check(t, bare, ifNoneMatch(etag), http.StatusNotModified, revalidate)
				check(t, bare+"?v=0123456789abcdef", nil, 200, revalidate)
				for _, m := range versionedImport.FindAllStringSubmatch(a.raw, -1) {
					urls = append(urls, "/js/"+m[1])
				}
				if bad := bareImport.FindAllString(a.raw, -1); len(bad) > 0 {
					t.Errorf("GET %s imports %q by bare URL: the page could run two versions", u, bad)
				}
			}
			if strings.HasPrefix(page, "/in/") && !slices.ContainsFunc(slices.Collect(maps.Keys(seen)), func(u string) bool { return strings.HasPrefix(u, "/js/panel.js?v=") }) {
				t.Errorf("the room page's files %v never reach panel.js: imports are not followed", seen)
			}
		})
	}
}

var (
	pageAsset       = regexp.MustCompile(`(?:src|href)="(/(?:js/[a-z0-9-]+\.js|favicon\.svg)\?v=[0-9a-f]+)"`)
	versionedImport = regexp.MustCompile(`from "\./([a-z0-9-]+\.js\?v=[0-9a-f]+)"`)
	bareImport      = regexp.MustCompile(`from "\./[a-z0-9-]+\.js"`)
)
