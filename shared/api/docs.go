package api

import (
	"bytes"
	"html/template"
	"net/http"
	"regexp"
	"sync"

	"github.com/letagents/letagents-go/docs"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/markdown"
)

// docPages are /docs (under "") and /docs/{doc}: the reference of package
// docs, rendered once by shared/markdown (sanitised as messages are), each
// a page served as the others, with its ETag.
var docPages = sync.OnceValues(func() (map[string]webPage, error) {
	all, err := docs.All()
	if err != nil {
		return nil, err
	}
	shell, err := template.ParseFS(webFS, "web/docs.html")
	if err != nil {
		return nil, err
	}
	page := func(title, current string, body template.HTML) (webPage, error) {
		var b bytes.Buffer
		data := struct {
			Title, Current string
			Body           template.HTML
			Docs           []docs.Doc
		}{title, current, body, all}
		if err := shell.Execute(&b, data); err != nil {
			return webPage{}, err
		}
		// The highlighted code's colours, as the room page has them.
		return newPage(bytes.Replace(b.Bytes(), []byte("</head>"), []byte("<style>\n"+markdown.CSS()+"</style>\n</head>"), 1))
	}
	pages := map[string]webPage{}
	if pages[""], err = page("Reference", "", ""); err != nil {
		return nil, err
	}
	for _, d := range all {
		html := docLink.ReplaceAllString(markdown.Document(d.Markdown), `href="/docs/$1$2"`)
		// The sanitiser's output, which nothing after it makes unsafe.
		if pages[d.Name], err = page(d.Title, d.Name, template.HTML(html)); err != nil {
			return nil, err
		}
	}
	return pages, nil
})

// docLink is a document's link to another beside it, limits.md#x, which
// the page serves as /docs/limits#x.
var docLink = regexp.MustCompile(`href="([a-z][a-z0-9-]*)\.md(#[^"]*)?"`)

func (s *server) docsIndex(w http.ResponseWriter, r *http.Request, _ call) error {
	return s.docPage(w, r, "")
}

func (s *server) docsPage(w http.ResponseWriter, r *http.Request, c call) error {
	name := c.ps["doc"]
	if name == "" {
		return letagents.Errorf(letagents.NotFound, "no document %q", name)
	}
	return s.docPage(w, r, name)
}

func (s *server) docPage(w http.ResponseWriter, r *http.Request, name string) error {
	pages, err := docPages()
	if err != nil {
		return err
	}
	p, ok := pages[name]
	if !ok {
		return letagents.Errorf(letagents.NotFound, "no document %q", name)
	}
	return p.serve(w, r)
}
