package main

import (
	"encoding/json"
	"fmt"
	"mime"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// vars is what one server taught the run so far: the credentials seeded
// into its database and the ids it handed out, by name. The same name
// holds a different value on each server; normalising a response puts the
// name back in place of the value, so two responses that refer to the
// same thing compare equal.
type vars map[string]string

// minInnerVar is the shortest value replaced inside a longer string; a
// shorter one (msg_1) is replaced only where it is the whole string, so
// that msg_1 never eats into msg_12.
const minInnerVar = 8

// Shapes of values that differ on every run whoever serves them. Timestamps
// are matched in every ISO 8601 form, so that a server answering in
// another format than the other still shows up as a difference. Long hex
// runs are replaced inside words too: ids such as tl_<32 hex>.
var (
	isoTime    = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})`)
	inviteCode = regexp.MustCompile(`\b[A-Z0-9]{4}(?:-[A-Z0-9]{4}){1,2}\b`)
	uuid       = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	longHex    = regexp.MustCompile(`[0-9a-f]{32,}`)
	// randomName is the shape of the display name a room is given when
	// created (granite-pine): drawn from word lists, ours not the
	// original's, so only the shape can compare.
	randomName = regexp.MustCompile(`^[a-z]+-[a-z]+$`)
)

// normaliseString replaces known values by {name}, then volatile shapes by
// a placeholder: <ts>, <code>, <uuid>, <hex>.
func normaliseString(s string, vs vars) string {
	names := vs.byLength()
	for _, name := range names {
		if s == vs[name] {
			return "{" + name + "}"
		}
	}
	for _, name := range names {
		if v := vs[name]; len(v) >= minInnerVar {
			s = strings.ReplaceAll(s, v, "{"+name+"}")
		}
	}
	s = isoTime.ReplaceAllString(s, "<ts>")
	s = inviteCode.ReplaceAllString(s, "<code>")
	s = uuid.ReplaceAllString(s, "<uuid>")
	return longHex.ReplaceAllString(s, "<hex>")
}

// byLength lists the names longest value first, so that a value that
// contains another is replaced whole.
func (vs vars) byLength() []string {
	names := make([]string, 0, len(vs))
	for name, v := range vs {
		if v != "" {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := len(vs[b]) - len(vs[a]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return names
}

// normalise returns a copy of a decoded JSON value with every string
// normalised, and display names still in the shape of a random room name
// (none of the vars) replaced by <random-name>.
func normalise(v any, vs vars) any {
	switch v := v.(type) {
	case string:
		return normaliseString(v, vs)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			n := normalise(e, vs)
			if s, ok := n.(string); ok && k == "display_name" && randomName.MatchString(s) {
				n = "<random-name>"
			}
			out[k] = n
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalise(e, vs)
		}
		return out
	default:
		return v
	}
}

// Body kinds, from the Content-Type of a response.
const (
	kindEmpty = "empty"
	kindJSON  = "json"
	kindHTML  = "html"
	kindText  = "text"
	kindSSE   = "sse"
)

// bodyKind classifies a response body by its Content-Type: what a client
// parses it as. A body that claims JSON but does not parse is reported as
// "bad-json".
func bodyKind(contentType string, body []byte) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "text/event-stream":
		return kindSSE
	case len(body) == 0:
		return kindEmpty
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		if !json.Valid(body) {
			return "bad-json"
		}
		return kindJSON
	case mt == "text/html":
		return kindHTML
	case strings.HasPrefix(mt, "text/"):
		return kindText
	case mt == "":
		return "untyped"
	}
	return mt
}

// observed is one server's answer to one case, normalised. A case that
// could not be sent (a value it needs was never handed out) has NotRun set.
type observed struct {
	NotRun   string
	missing  string // the var a request that did not run needed
	Status   int
	Kind     string
	Location string
	Body     any // decoded JSON, the text of a text body, or nil
}

// newObserved normalises a raw response.
func newObserved(status int, contentType, location string, body []byte, vs vars) observed {
	o := observed{Status: status, Kind: bodyKind(contentType, body), Location: normaliseString(location, vs)}
	switch o.Kind {
	case kindJSON:
		var v any
		// bodyKind checked that it parses.
		_ = json.Unmarshal(body, &v)
		o.Body = normalise(v, vs)
	case kindText, kindSSE:
		o.Body = normaliseString(string(body), vs)
	}
	return o
}

// absent stands for a member one side does not have.
const absent = "<absent>"

// item is one difference between the two answers to a case: where, and
// what each side had there (rendered compactly).
type item struct {
	Path   string
	Anchor string
	Ours   string
}

func (it item) String() string {
	return fmt.Sprintf("%s: %s | %s", it.Path, it.Anchor, it.Ours)
}

// compare lists the differences between the anchor's answer and ours.
// HTML bodies are not compared: pages are written anew, only their being
// pages counts.
func compare(a, o observed) []item {
	if a.NotRun != "" || o.NotRun != "" {
		if a.NotRun == o.NotRun {
			return nil
		}
		return []item{{"run", orRan(a.NotRun), orRan(o.NotRun)}}
	}
	var items []item
	if a.Status != o.Status {
		items = append(items, item{"status", strconv.Itoa(a.Status), strconv.Itoa(o.Status)})
	}
	if a.Kind != o.Kind {
		items = append(items, item{"body", a.Kind, o.Kind})
	}
	if a.Location != o.Location {
		items = append(items, item{"location", a.Location, o.Location})
	}
	if a.Kind == o.Kind && a.Kind != kindHTML {
		items = append(items, diffJSON("$", a.Body, o.Body)...)
	}
	return items
}

func orRan(notRun string) string {
	if notRun == "" {
		return "ran"
	}
	return "not run: " + notRun
}

// diffJSON lists where two decoded JSON values differ: members one side
// lacks, elements past the shorter array, leaves of different values.
func diffJSON(path string, a, b any) []item {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		var items []item
		for _, k := range keys {
			av, ain := am[k]
			bv, bin := bm[k]
			p := path + "." + k
			switch {
			case !ain:
				items = append(items, item{p, absent, render(bv)})
			case !bin:
				items = append(items, item{p, render(av), absent})
			default:
				items = append(items, diffJSON(p, av, bv)...)
			}
		}
		return items
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		var items []item
		for i := range max(len(as), len(bs)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(as):
				items = append(items, item{p, absent, render(bs[i])})
			case i >= len(bs):
				items = append(items, item{p, render(as[i]), absent})
			default:
				items = append(items, diffJSON(p, as[i], bs[i])...)
			}
		}
		return items
	}
	if ra, rb := render(a), render(b); ra != rb {
		return []item{{path, ra, rb}}
	}
	return nil
}

// maxRendered bounds a value shown in a difference.
const maxRendered = 96

// render is a value as compact JSON, cut to maxRendered bytes.
func render(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	// Placeholders (<ts>) read better unescaped.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(s) > maxRendered {
		s = s[:maxRendered-1] + "…"
	}
	return s
}
