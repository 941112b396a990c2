package browser_test

import (
	"testing"
)

// TestCodeFollowsTheThemeToggle: highlighted code takes the page's theme,
// whether the reader's system or the page's toggle chose it: dark code on
// a page toggled dark under a light system (light code there had too
// little contrast on the dark page), light code on one toggled light
// under a dark system.
func TestCodeFollowsTheThemeToggle(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "github.com/acme/theme"
	r.join(room)
	r.send(room, "Builder", "```go\nfunc main() { fmt.Println(\"hi\") }\n```")
	roomURL := r.URL + "/in/" + roomPath(room)
	colours := map[string]string{}
	for _, c := range []struct{ name, system, toggle string }{
		{"light system", "light", ""},
		{"dark system", "dark", ""},
		{"light system toggled dark", "light", "dark"},
		{"dark system toggled light", "dark", "light"},
	} {
		b := newTab(t)
		b.scheme(c.system)
		b.open(roomURL)
		b.until("the page's origin", `document.readyState === "complete"`)
		if c.toggle == "" {
			eval[any](b, `localStorage.removeItem("letagents.theme")`)
		} else {
			eval[any](b, `localStorage.setItem("letagents.theme", `+jsString(c.toggle)+`)`)
		}
		b.open(roomURL)
		b.until(c.name+": the code", `document.querySelector("#log pre.hl-chroma .hl-kd")`)
		b.until(c.name+": the stylesheets applied", stylesApplied)
		colours[c.name] = eval[string](b, `getComputedStyle(document.querySelector("#log pre.hl-chroma .hl-kd")).color`)
	}
	if colours["light system"] == colours["dark system"] {
		t.Fatalf("the keyword is %s in both themes: the test cannot tell them apart", colours["light system"])
	}
	for toggled, want := range map[string]string{"light system toggled dark": "dark system", "dark system toggled light": "light system"} {
		if colours[toggled] != colours[want] {
			t.Errorf("%s: keyword %s, want the %s's %s", toggled, colours[toggled], want, colours[want])
		}
	}
}
