// Package markdown turns a chat message, written in Markdown, into HTML
// that a page may insert as it is. Parsing is goldmark's (CommonMark plus
// GitHub's tables, strikethrough and bare-URL links), fenced code is
// highlighted by chroma with class names (the page carries their
// stylesheet, CSS), and bluemonday sanitises the result: whatever the
// text holds, the HTML carries no script, no event handler, no style and
// no URL but http(s), mailto and relative ones.
//
// HTML written in a message is shown as text, as a chat shows what was
// typed, rather than dropped; images become links, which the pages' CSP
// would block anyway and which would tell a third party who reads the room.
package markdown

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// MaxHighlightBytes is how much fenced code of one message is
// highlighted, fence by fence in order while they fit; the rest is shown
// plain. chroma tokenises at about 1 MB/s, goldmark and bluemonday
// several times faster: this keeps a message's cost near theirs.
const MaxHighlightBytes = 16 << 10

// plainAttr marks, on a fenced code block, that the message's highlight
// budget did not cover it.
var plainAttr = []byte("letagents-plain")

// classPrefix marks chroma's classes, and only classes so marked pass the
// sanitiser: the page's own classes cannot be borrowed.
const classPrefix = "hl-"

// The styles are chroma's Modus themes, built to keep text contrast at or
// above WCAG AAA in light and in dark.
const (
	lightStyle = "modus-operandi"
	darkStyle  = "modus-vivendi"
)

var (
	formatter = chromahtml.New(chromahtml.WithClasses(true), chromahtml.ClassPrefix(classPrefix),
		chromahtml.WithPreWrapper(focusablePre{}))

	// A chat's line breaks are meant: every one is kept.
	md = newMarkdown(html.WithHardWraps())
	// A document's lines are wrapped for its source: a paragraph flows.
	doc = newMarkdown()

	policy = sanitiser()
)

// sanitiser allows what goldmark writes for the Markdown above and
// nothing else: no id (which could shadow the page's own), no style, no
// image, no form.
func sanitiser() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowStandardURLs() // parseable; relative, http(s) or mailto; rel="nofollow"
	p.AllowElements("p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li",
		"h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td", "span")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("title").Matching(bluemonday.Paragraph).OnElements("a")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowAttrs("align").Matching(bluemonday.CellAlign).OnElements("th", "td")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^`+classPrefix+`[a-z0-9-]+( `+classPrefix+`[a-z0-9-]+)*$`)).OnElements("pre", "span")
	// A <pre> scrolls sideways; tabindex 0 lets a keyboard scroll it.
	p.AllowAttrs("tabindex").Matching(regexp.MustCompile(`^0$`)).OnElements("pre")
	p.AddTargetBlankToFullyQualifiedLinks(true) // and rel="noopener"
	p.RequireNoReferrerOnFullyQualifiedLinks(true)
	return p
}

func newMarkdown(opts ...renderer.Option) goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.Strikethrough, extension.Linkify,
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute))),
		goldmark.WithRendererOptions(append(opts, renderer.WithNodeRenderers(util.Prioritized(chatRenderer{}, 100)))...),
	)
}

// HTML renders text, a chat message. It never fails: a text goldmark
// cannot render, which it has no reason to, comes back escaped in a
// paragraph.
func HTML(text string) string { return render(md, text) }

// Document renders text, a document such as docs/*.md, as HTML does a
// message but with its paragraphs' source lines joined, sanitised alike.
func Document(text string) string { return render(doc, text) }

func render(md goldmark.Markdown, text string) string {
	src := []byte(text)
	doc := md.Parser().Parse(gmtext.NewReader(src))
	budget := MaxHighlightBytes
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if fence, ok := n.(*ast.FencedCodeBlock); ok && entering {
			if size := len(lines(src, fence)); size <= budget {
				budget -= size
			} else {
				fence.SetAttribute(plainAttr, true)
			}
		}
		return ast.WalkContinue, nil
	})
	var b bytes.Buffer
	if err := md.Renderer().Render(&b, src, doc); err != nil {
		return "<p>" + string(util.EscapeHTML(src)) + "</p>"
	}
	return policy.Sanitize(b.String())
}

// CSS is the stylesheet of highlighted code: chroma's light theme, and
// its dark one where the page is dark: by the reader's system unless the
// page's theme toggle chose light (data-theme on the root), or by the
// toggle. The dark rules are nested under those roots (CSS nesting).
var CSS = sync.OnceValue(func() string {
	var b strings.Builder
	write := func(name string) {
		style := styles.Get(name)
		if style == nil || style.Name != name {
			panic("chroma has no style " + name) // a build without it: tests catch this
		}
		if err := formatter.WriteCSS(&b, style); err != nil {
			panic(fmt.Sprintf("chroma css for %s: %v", name, err)) // writes to a strings.Builder do not fail
		}
	}
	write(lightStyle)
	b.WriteString("@media (prefers-color-scheme: dark) {\n:root:not([data-theme=\"light\"]) {\n")
	write(darkStyle)
	b.WriteString("}\n}\n:root[data-theme=\"dark\"] {\n")
	write(darkStyle)
	b.WriteString("}\n")
	return b.String()
})

// chatRenderer replaces goldmark's rendering of the nodes a chat treats
// its own way.
type chatRenderer struct{}

func (chatRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindFencedCodeBlock, renderFencedCode)
	reg.Register(ast.KindCodeBlock, renderCode)
	reg.Register(ast.KindImage, renderImage)
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := node.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
		}
	}
	return ast.WalkSkipChildren, nil
}

// renderHTMLBlock shows a block of HTML as a paragraph of its text, its
// lines kept.
func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.HTMLBlock)
	text := lines(source, n)
	if n.HasClosure() {
		text = append(text, n.ClosureLine.Value(source)...)
	}
	lines := bytes.Split(bytes.TrimRight(text, "\r\n"), []byte("\n"))
	_, _ = w.WriteString("<p>")
	for i, l := range lines {
		if i > 0 {
			_, _ = w.WriteString("<br>\n")
		}
		_, _ = w.Write(util.EscapeHTML(bytes.TrimSuffix(l, []byte("\r"))))
	}
	_, _ = w.WriteString("</p>\n")
	return ast.WalkSkipChildren, nil
}

// renderFencedCode highlights a fence whose language chroma knows.
func renderFencedCode(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.FencedCodeBlock)
	code := lines(source, n)
	_, plain := n.Attribute(plainAttr)
	if lexer := codeLexer(n.Language(source)); lexer != nil && !plain {
		if it, err := chroma.Coalesce(lexer).Tokenise(nil, string(code)); err == nil {
			var b bytes.Buffer
			if err := formatter.Format(&b, styles.Get(lightStyle), it); err == nil {
				_, _ = w.Write(b.Bytes())
				_ = w.WriteByte('\n')
				return ast.WalkSkipChildren, nil
			}
		}
	}
	writeCode(w, code)
	return ast.WalkSkipChildren, nil
}

// renderCode writes an indented code block as goldmark would, but
// focusable as the highlighted ones are.
func renderCode(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		writeCode(w, lines(source, node))
	}
	return ast.WalkSkipChildren, nil
}

func writeCode(w util.BufWriter, code []byte) {
	_, _ = w.WriteString(`<pre tabindex="0"><code>`)
	_, _ = w.Write(util.EscapeHTML(code))
	_, _ = w.WriteString("</code></pre>\n")
}

// lines is the text of a block node's lines.
func lines(source []byte, n ast.Node) []byte {
	var b []byte
	for i := range n.Lines().Len() {
		seg := n.Lines().At(i)
		b = append(b, seg.Value(source)...)
	}
	return b
}

// focusablePre wraps highlighted code as writeCode does.
type focusablePre struct{}

func (focusablePre) Start(code bool, styleAttr string) string {
	return `<pre tabindex="0"` + styleAttr + `><code>`
}

func (focusablePre) End(code bool) string { return "</code></pre>" }

// codeLexer is chroma's lexer for a fence's language, nil for none or
// one chroma does not know.
func codeLexer(lang []byte) chroma.Lexer {
	if len(lang) == 0 {
		return nil
	}
	return lexers.Get(string(lang))
}

// renderImage writes an image as a link to it, its alt text (or else its
// address) the link's text.
func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Image)
	dest := util.URLEscape(n.Destination, true)
	safe := !html.IsDangerousURL(dest)
	if entering {
		if safe {
			_, _ = w.WriteString(`<a href="`)
			_, _ = w.Write(util.EscapeHTML(dest))
			_, _ = w.WriteString(`">`)
		}
		if n.ChildCount() == 0 {
			_, _ = w.Write(util.EscapeHTML(n.Destination))
		}
		return ast.WalkContinue, nil
	}
	if safe {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}
