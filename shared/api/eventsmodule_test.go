package api_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/wire"
)

var updateEvents = flag.Bool("update-events", false, "rewrite web/js/events.js from wire.Events")

// eventsModule is web/js/events.js as wire.Events makes it: one constant
// per live event, named after it in capitals, and EVENTS, all of them.
func eventsModule() string {
	var b strings.Builder
	b.WriteString("// The live events of a room's event stream, from shared/wire/events.go\n")
	b.WriteString("// (wire.Events), their one home. Generated: do not edit; after changing\n")
	b.WriteString("// them run go test ./shared/api -run TestEventsModule -update-events.\n\n")
	for _, name := range wire.Events {
		b.WriteString("export const " + strings.ToUpper(name) + " = \"" + name + "\";\n")
	}
	b.WriteString("\n// EVENTS lists them all.\nexport const EVENTS = Object.freeze([")
	for i, name := range wire.Events {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.ToUpper(name))
	}
	b.WriteString("]);\n")
	return b.String()
}

// TestEventsModule holds the page's event names (web/js/events.js, as
// served) to the Go registry, so the page listens for exactly the events
// the stream sends.
func TestEventsModule(t *testing.T) {
	t.Parallel()
	want := eventsModule()
	const path = "web/js/events.js"
	if *updateEvents {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, nil)
	if got := e.call(t, "GET", "/js/events.js", "").want(t, 200, "").raw; got != want {
		t.Errorf("GET /js/events.js =\n%s\nwant (from wire.Events; go test ./shared/api -run TestEventsModule -update-events rewrites it)\n%s", got, want)
	}
}
