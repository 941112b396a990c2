package api

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestAssetURLsFollowContent: a file's versioned URL changes when the
// file does, and so does that of every module importing it, up to the
// page's script, while a module that does not import it keeps its URL
// (and the browser's copy); an import cycle or a missing module fails.
func TestAssetURLsFollowContent(t *testing.T) {
	t.Parallel()
	files := func(dom string) fstest.MapFS {
		return fstest.MapFS{
			"web/favicon.svg":   {Data: []byte("<svg/>")},
			"web/js/room.js":    {Data: []byte(`import { $ } from "./dom.js";` + "\n" + `import "./theme.js";`)},
			"web/js/dom.js":     {Data: []byte(dom)},
			"web/js/theme.js":   {Data: []byte(`document.documentElement.dataset.theme = "dark";`)},
			"web/js/a.test.js":  {Data: []byte(`import "./nowhere.js";`)},
			"web/js/landing.js": {Data: []byte(`const m = await import("./dom.js");`)},
		}
	}
	before, err := assetsOf(files("export const $ = 1;"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := assetsOf(files("export const $ = 2;"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["js/a.test.js"]; ok {
		t.Errorf("a test file is served")
	}
	room := string(before["js/room.js"].body)
	if want := `from "./dom.js?v=` + before["js/dom.js"].hash + `"`; !strings.Contains(room, want) {
		t.Errorf("room.js = %q, want it to import %s", room, want)
	}
	if want := `import "./theme.js?v=` + before["js/theme.js"].hash + `"`; !strings.Contains(room, want) {
		t.Errorf("room.js = %q, want it to import %s", room, want)
	}
	if want := `import("./dom.js?v=`; !strings.Contains(string(before["js/landing.js"].body), want) {
		t.Errorf("landing.js = %q, want its dynamic import versioned", before["js/landing.js"].body)
	}
	for _, tt := range []struct {
		path    string
		changes bool
	}{
		{"js/dom.js", true},
		{"js/room.js", true},
		{"js/landing.js", true},
		{"js/theme.js", false},
		{"favicon.svg", false},
	} {
		b, a := before[tt.path], after[tt.path]
		if changed := b.url != a.url; changed != tt.changes {
			t.Errorf("dom.js changed: %s's URL %s → %s, want changed %v", tt.path, b.url, a.url, tt.changes)
		}
		if !strings.HasPrefix(a.url, "/"+tt.path+"?v=") {
			t.Errorf("%s's URL = %q", tt.path, a.url)
		}
	}

	for name, fsys := range map[string]fstest.MapFS{
		"cycle":   {"web/favicon.svg": {}, "web/js/a.js": {Data: []byte(`import "./b.js";`)}, "web/js/b.js": {Data: []byte(`import "./a.js";`)}},
		"missing": {"web/favicon.svg": {}, "web/js/a.js": {Data: []byte(`import "./b.js";`)}},
	} {
		if _, err := assetsOf(fsys); err == nil {
			t.Errorf("%s: assetsOf answers no error", name)
		}
	}
}
