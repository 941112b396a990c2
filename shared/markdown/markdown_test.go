package markdown_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/letagents/letagents-go/shared/markdown"
)

// allowed is every element, and its attributes, that rendered HTML may
// hold; safeHTML checks against it.
var allowed = map[string][]string{
	"p": nil, "br": nil, "strong": nil, "em": nil, "del": nil, "code": nil, "blockquote": nil,
	"ul": nil, "li": nil, "ol": {"start"}, "hr": nil,
	"h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"align"}, "td": {"align"},
	"pre": {"tabindex", "class"}, "span": {"class"},
	"a": {"href", "title", "rel", "target"},
}

var chromaClass = regexp.MustCompile(`^hl-[a-z0-9-]+( hl-[a-z0-9-]+)*$`)

// safeHTML fails t unless out, parsed as a browser would parse it inside a
// <div>, has only allowed elements and attributes, every link an http(s),
// mailto or relative one (opening a new tab without an opener when
// absolute), and no class but chroma's.
func safeHTML(t *testing.T, in, out string) {
	t.Helper()
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(out), ctx)
	if err != nil {
		t.Fatalf("HTML(%.80q) does not parse: %v\n%.400s", in, err, out)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			attrs, ok := allowed[n.Data]
			if !ok {
				t.Errorf("HTML(%.80q) has a <%s>:\n%.400s", in, n.Data, out)
			}
			for _, a := range n.Attr {
				if !contains(attrs, a.Key) {
					t.Errorf("HTML(%.80q) has <%s %s=%q>:\n%.400s", in, n.Data, a.Key, a.Val, out)
				}
				switch a.Key {
				case "href":
					checkHref(t, in, out, n, a.Val)
				case "class":
					if !chromaClass.MatchString(a.Val) {
						t.Errorf("HTML(%.80q) has class %q, not chroma's:\n%.400s", in, a.Val, out)
					}
				case "tabindex":
					if a.Val != "0" {
						t.Errorf("HTML(%.80q) has tabindex %q:\n%.400s", in, a.Val, out)
					}
				}
			}
		case html.CommentNode, html.DoctypeNode:
			t.Errorf("HTML(%.80q) has a comment or doctype %q:\n%.400s", in, n.Data, out)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
}

func checkHref(t *testing.T, in, out string, n *html.Node, href string) {
	t.Helper()
	u, err := url.Parse(href)
	if err != nil {
		t.Errorf("HTML(%.80q) has an unparsable href %q:\n%.400s", in, href, out)
		return
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
	case "":
		if u.Host == "" {
			return // relative: stays on the page's origin and tab
		}
		// scheme-relative: another site, as an http(s) link is
	default:
		t.Errorf("HTML(%.80q) has href %q of scheme %q:\n%.400s", in, href, u.Scheme, out)
		return
	}
	if u.Scheme == "mailto" || u.Host == "" {
		return // "http:" with no host is this page again
	}
	if attr(n, "target") != "_blank" || !strings.Contains(attr(n, "rel"), "noopener") {
		t.Errorf("HTML(%.80q): link to %q lacks target=_blank rel=noopener:\n%.400s", in, href, out)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// textOf is the text a reader sees in out.
func textOf(t *testing.T, out string) string {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(out), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return b.String()
}

// hostile are texts that try to get markup, script or a dangerous link
// through; shows is text the reader must still see (what was typed, as
// text), if any.
var hostile = []struct {
	name, in, shows string
}{
	{"script tag", `<script>window.pwned=1</script>`, `<script>window.pwned=1</script>`},
	{"script block", "<script>\nwindow.pwned=1\n</script>", "window.pwned=1"},
	{"img onerror", `<img src=x onerror="window.pwned=1">`, `<img src=x onerror="window.pwned=1">`},
	{"svg onload", `<svg onload=alert(1)>`, `<svg onload=alert(1)>`},
	{"iframe", `<iframe src="javascript:alert(1)"></iframe>`, `<iframe`},
	{"style tag", "<style>body{display:none}</style>", "<style>"},
	{"inline style", `<p style="position:fixed;inset:0">cover</p>`, `cover`},
	{"form", `<form action=/x><input name=a><button>go</button></form>`, `<form`},
	{"html comment", "<!-- hidden --> shown", "<!-- hidden --> shown"},
	{"cdata", "<![CDATA[<script>alert(1)</script>]]>", "CDATA"},
	{"math mxss", `<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`, "<math>"},
	{"noscript mxss", `<noscript><p title="</noscript><img src=x onerror=alert(1)>">`, "<noscript>"},
	{"javascript link", `[click](javascript:window.pwned=1)`, "click"},
	{"javascript link, mixed case", `[click](JaVaScRiPt:alert(1))`, "click"},
	{"javascript link, leading space", "[click](< javascript:alert(1)>)", "click"},
	{"javascript link, entity", `[click](&#106;avascript:alert(1))`, "click"},
	{"javascript link, tab", "[click](java\tscript:alert(1))", "click"},
	{"javascript link, percent", `[click](javascript%3Aalert(1))`, "click"},
	{"javascript reference link", "[click][x]\n\n[x]: javascript:alert(1)", "click"},
	{"javascript autolink", `<javascript:alert(1)>`, ""},
	{"vbscript link", `[click](vbscript:msgbox(1))`, "click"},
	{"data link", `[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)`, "click"},
	{"data image", `![x](data:image/svg+xml,<svg onload=alert(1)>)`, ""},
	{"file link", `[click](file:///etc/passwd)`, "click"},
	{"scheme-relative link", `[click](//evil.example/x)`, "click"},
	{"raw anchor", `<a href="javascript:alert(1)">click</a>`, `<a href="javascript:alert(1)">click</a>`},
	{"title breakout", `[click](https://example.com "x\" onmouseover=\"alert(1)")`, "click"},
	{"href breakout", `[click](https://example.com/"onmouseover="alert(1))`, "click"},
	{"linkify breakout", `https://example.com/"><script>alert(1)</script>`, "<script>"},
	{"fence language breakout", "```\"><script>alert(1)</script>\nx\n```", "x"},
	{"code holds markup", "```html\n<script>alert(1)</script>\n```", "<script>alert(1)</script>"},
	{"inline code holds markup", "`<img src=x onerror=alert(1)>`", "<img src=x onerror=alert(1)>"},
	{"image onerror title", `![a](x "\" onerror=\"alert(1)")`, "a"},
	{"heading id clobber", "# log {#log}", "log"},
	{"table cell markup", "| <b>a</b> |\n|---|\n| <img src=x onerror=alert(1)> |", "<img src=x onerror=alert(1)>"},
	{"nul and controls", "a\x00b\x01<script>", "<script>"},
	{"invalid utf-8", "\xff\xfe<script>alert(1)</script>", "<script>"},
	{"deep nesting", strings.Repeat(">", 5000) + " quote", "quote"},
	{"many brackets", strings.Repeat("[", 10000) + "x" + strings.Repeat("](javascript:alert(1))", 100), "x"},
}

func TestHostileInputs(t *testing.T) {
	t.Parallel()
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := markdown.HTML(tt.in)
			safeHTML(t, tt.in, out)
			if low := strings.ToLower(out); strings.Contains(low, "javascript:") && strings.Contains(low, "href") {
				// Only as text: checked above per href, said here for clarity.
				for _, h := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(out, -1) {
					if strings.Contains(strings.ToLower(h[1]), "javascript") {
						t.Errorf("an href holds javascript: %s", out)
					}
				}
			}
			if tt.shows != "" && !strings.Contains(textOf(t, out), tt.shows) {
				t.Errorf("HTML(%.80q) does not show %q as text:\n%.400s", tt.in, tt.shows, out)
			}
		})
	}
}

func TestRenders(t *testing.T) {
	t.Parallel()
	long := "```go\n" + strings.Repeat("x := 1\n", markdown.MaxHighlightBytes/7+1) + "```"
	// Two of these overrun the budget; a small fence after them fits.
	half := "```go\n" + strings.Repeat("x := 1\n", markdown.MaxHighlightBytes/7*2/3) + "```"
	tests := []struct {
		name, in string
		want     []string // substrings of the HTML, in order
		not      []string
	}{
		{"emphasis", "**bold** _it_ ~~gone~~", []string{"<strong>bold</strong>", "<em>it</em>", "<del>gone</del>"}, nil},
		{"line breaks kept", "one\ntwo", []string{"one<br>", "two"}, nil},
		{"absolute link opens a new tab", "[docs](https://example.com/a?b=1&c=2)",
			[]string{`<a href="https://example.com/a?b=1&amp;c=2"`, `noopener`, `target="_blank"`, ">docs</a>"}, nil},
		{"relative link stays", "[room](/in/other)", []string{`<a href="/in/other"`, ">room</a>"}, []string{"target="}},
		{"bare URL linked", "see https://example.com/x now", []string{`<a href="https://example.com/x"`, "target=\"_blank\""}, nil},
		{"mailto", "[me](mailto:a@example.com)", []string{`<a href="mailto:a@example.com"`}, nil},
		{"table", "| a | b |\n|:--|--:|\n| 1 | 2 |", []string{"<table>", `<th align="left">a</th>`, `<td align="right">2</td>`}, nil},
		{"highlighted fence", "```go\nfunc main() {}\n```", []string{`<pre tabindex="0" class="hl-chroma"><code>`, `<span class="hl-kd">func</span>`}, nil},
		{"unknown language plain", "```nosuchlang\n<x>\n```", []string{`<pre tabindex="0"><code>&lt;x&gt;`}, []string{"hl-"}},
		{"fence without language plain", "```\nfunc main() {}\n```", []string{`<pre tabindex="0"><code>func main() {}`}, []string{"hl-"}},
		{"long fence plain", long, []string{`<pre tabindex="0"><code>x := 1`}, []string{"hl-"}},
		{"highlight budget shared by fences", half + "\n" + half + "\n```go\nfunc f() {}\n```",
			[]string{`class="hl-chroma"`, `<pre tabindex="0"><code>x := 1`, `class="hl-chroma"`, `hl-kd`}, nil},
		{"indented code", "    a <b>", []string{`<pre tabindex="0"><code>a &lt;b&gt;`}, nil},
		{"image as link", "![the plan](https://example.com/p.png)", []string{`<a href="https://example.com/p.png"`, ">the plan</a>"}, []string{"<img"}},
		{"image without alt", "![](https://example.com/p.png)", []string{">https://example.com/p.png</a>"}, []string{"<img"}},
		{"html as text", "a <b>b</b>", []string{"a &lt;b&gt;b&lt;/b&gt;"}, []string{"<b>"}},
		{"task list left as typed", "- [ ] todo", []string{"<li>[ ] todo</li>"}, []string{"<input"}},
		{"lists", "1. one\n2. two\n\n- x", []string{"<ol>", "<li>one</li>", "<ul>", "<li>x</li>"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := markdown.HTML(tt.in)
			safeHTML(t, tt.in, out)
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("HTML(%.40q) lacks %q (in order):\n%.600s", tt.in, w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("HTML(%.40q) has %q:\n%.600s", tt.in, n, out)
				}
			}
		})
	}
}

// TestDocument: a document renders as a message does, sanitised alike,
// but a paragraph's source lines flow together.
func TestDocument(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want, not string }{
		{"lines joined", "one\ntwo", "<p>one\ntwo</p>", "<br>"},
		{"html as text", "a <script>x</script>", "a &lt;script&gt;", "<script>"},
		{"table", "| a |\n|---|\n| 1 |", "<td>1</td>", "<br>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := markdown.Document(tt.in)
			safeHTML(t, tt.in, out)
			if !strings.Contains(out, tt.want) || strings.Contains(out, tt.not) {
				t.Errorf("Document(%q) = %q, want %q and no %q", tt.in, out, tt.want, tt.not)
			}
		})
	}
}

func TestCSS(t *testing.T) {
	t.Parallel()
	css := markdown.CSS()
	for _, want := range []string{".hl-chroma", ".hl-kd", "@media (prefers-color-scheme: dark)", `:root:not([data-theme="light"])`, `:root[data-theme="dark"]`} {
		if !strings.Contains(css, want) {
			t.Errorf("CSS lacks %q", want)
		}
	}
	if strings.Contains(css, "</") {
		t.Errorf("CSS holds %q, which would end the <style> it goes in", "</")
	}
}

// FuzzHTML: whatever the text, the HTML is safe.
func FuzzHTML(f *testing.F) {
	for _, tt := range hostile {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		safeHTML(t, in, markdown.HTML(in))
	})
}

func ExampleHTML() {
	fmt.Println(markdown.HTML("**hi** <script>x</script> [a](javascript:x)"))
	// Output: <p><strong>hi</strong> &lt;script&gt;x&lt;/script&gt; a</p>
}

func BenchmarkHTML(b *testing.B) {
	para := "Some **bold** text with a [link](https://example.com) and `code`, <b>tags</b> & more.\n"
	code := "```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n"
	for _, bb := range []struct {
		name, text string
	}{
		{"chat line", "done: merged #12, see https://example.com/pr/12"},
		{"1MiB prose", strings.Repeat(para, (1<<20)/len(para))},
		{"1MiB of small fences", strings.Repeat(code, (1<<20)/len(code))},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.text)))
			for b.Loop() {
				markdown.HTML(bb.text)
			}
		})
	}
}
