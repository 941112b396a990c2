package prompts

import (
	"strings"
	"sync"
	"testing"
)

var kinds = []Kind{Join, Inline, Auto}

func TestJoinAlwaysFull(t *testing.T) {
	t.Parallel()
	var d Delivery
	for i := range 3 {
		if got := d.For(Join); got != Full(Join) {
			t.Errorf("call %d: For(Join) = %q; want Full(Join)", i+1, got)
		}
	}
	if got := d.For(Inline); got != Compact() {
		t.Errorf("For(Inline) after a join = %q; want Compact()", got)
	}
	if got := d.For(Join); got != Full(Join) {
		t.Errorf("For(Join) after a compact = %q; want Full(Join)", got)
	}
}

func TestFirstFullThenCompact(t *testing.T) {
	t.Parallel()
	for _, first := range []Kind{Inline, Auto} {
		t.Run(string(first), func(t *testing.T) {
			t.Parallel()
			var d Delivery
			if got := d.For(first); got != Full(first) {
				t.Errorf("first For(%s) = %q; want Full(%s)", first, got, first)
			}
			for _, k := range []Kind{Inline, Auto, Inline} {
				if got := d.For(k); got != Compact() {
					t.Errorf("later For(%s) = %q; want Compact()", k, got)
				}
			}
		})
	}
}

func TestDeliveriesAreSeparate(t *testing.T) {
	t.Parallel()
	var a, b Delivery
	a.For(Auto)
	if got := b.For(Auto); got != Full(Auto) {
		t.Errorf("For(Auto) on a fresh Delivery = %q; want Full(Auto)", got)
	}
}

func TestConcurrentFullOnce(t *testing.T) {
	t.Parallel()
	const callers = 50
	var (
		d       Delivery
		wg      sync.WaitGroup
		start   = make(chan struct{})
		results = make([]string, callers)
	)
	for i := range callers {
		wg.Go(func() {
			<-start
			results[i] = d.For(kinds[1+i%2]) // Inline and Auto
		})
	}
	close(start)
	wg.Wait()
	full, short := 0, 0
	for i, r := range results {
		switch r {
		case Full(Inline), Full(Auto):
			full++
		case Compact():
			short++
		default:
			t.Errorf("caller %d got %q; want a full text or Compact()", i, r)
		}
	}
	if full != 1 || short != callers-1 {
		t.Errorf("%d callers got %d full and %d compact texts; want 1 and %d", callers, full, short, callers-1)
	}
}

func TestTextsMentionTheLoop(t *testing.T) {
	t.Parallel()
	texts := map[string]string{"Compact()": Compact()}
	for _, k := range kinds {
		texts["Full("+string(k)+")"] = Full(k)
	}
	for name, text := range texts {
		for _, want := range []string{"wait_for_messages", "after_message_id", "send_thread_message", "thread_parent_id"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not mention %s", name, want)
			}
		}
	}
	for _, k := range kinds {
		for _, want := range []string{"send_message", "publish_room_artifact", "empty", "ask in the room", "system_message_ids"} {
			if !strings.Contains(Full(k), want) {
				t.Errorf("Full(%s) does not mention %q", k, want)
			}
		}
	}
}

func TestFullOpenings(t *testing.T) {
	t.Parallel()
	seen := map[string]Kind{}
	for _, k := range kinds {
		text := Full(k)
		opening, _, _ := strings.Cut(text, "\n")
		if opening == "" {
			t.Fatalf("Full(%s) has no opening line", k)
		}
		if other, dup := seen[opening]; dup {
			t.Errorf("Full(%s) and Full(%s) open alike: %q", k, other, opening)
		}
		seen[opening] = k
		if n := len(strings.Fields(text)); n < 150 || n > 300 {
			t.Errorf("Full(%s) has %d words; want 150 to 300", k, n)
		}
	}
	if !strings.Contains(Full(Join), "joined") {
		t.Errorf("Full(Join) does not say the room was joined")
	}
	if got := Full("unknown"); got != Full(Auto) {
		t.Errorf("Full(unknown) = %q; want Full(Auto)", got)
	}
}

func TestCompactIsShort(t *testing.T) {
	t.Parallel()
	if n := len(Compact()); n >= 300 {
		t.Errorf("len(Compact()) = %d; want under 300", n)
	}
	if n := len(Compact()); n >= len(Full(Auto)) {
		t.Errorf("Compact() is not shorter than Full(Auto)")
	}
}
