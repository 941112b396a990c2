// Package docs is the reference README points to, one Markdown file per
// subject. The files are embedded so that the server can serve them at
// /docs and a deployed binary documents itself; this package's tests hold
// each reference table to the code it describes, so a route, variable,
// limit or tool added without its line here fails `make test`, and so
// does a line left behind by one removed.
package docs

import (
	"embed"
	"io/fs"
	"regexp"
	"strings"
)

//go:embed *.md
var files embed.FS

// Doc is one document of the reference.
type Doc struct {
	Name     string // the file's name without .md: "limits"
	Title    string // its first heading
	Markdown string
}

// All is every document, by name.
func All() ([]Doc, error) {
	names, err := fs.Glob(files, "*.md")
	if err != nil {
		return nil, err
	}
	all := make([]Doc, 0, len(names))
	for _, n := range names {
		text, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(n, ".md")
		title := name
		if m := heading.FindSubmatch(text); m != nil {
			title = strings.ReplaceAll(string(m[1]), "`", "")
		}
		all = append(all, Doc{Name: name, Title: title, Markdown: string(text)})
	}
	return all, nil
}

// heading is a document's first level-one heading.
var heading = regexp.MustCompile(`(?m)^# (.+?)\s*$`)
