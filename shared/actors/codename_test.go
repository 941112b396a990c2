package actors

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
)

func TestCodenameWords(t *testing.T) {
	t.Parallel()
	if len(codenameWords) != 100 {
		t.Fatalf("len(codenameWords) = %d; want 100", len(codenameWords))
	}
	word := regexp.MustCompile(`^[a-z]+$`)
	seen := make(map[string]int, len(codenameWords))
	for i, w := range codenameWords {
		if !word.MatchString(w) {
			t.Errorf("codenameWords[%d] = %q; want one lower-case word", i, w)
		}
		if j, dup := seen[w]; dup {
			t.Errorf("codenameWords[%d] = %q repeats codenameWords[%d]", i, w, j)
		}
		seen[w] = i
	}
}

// TestCodenamePinned guards the list's order: these names are what
// existing agents are called.
func TestCodenamePinned(t *testing.T) {
	t.Parallel()
	tests := []struct{ key, display, name string }{
		{"codex:thread-1", "SparrowSun", "sparrowsun"},
		{"instance:00000000-0000-4000-8000-000000000000", "HazelBay", "hazelbay"},
		{"ada/rivervalley", "TimberSpring", "timberspring"},
	}
	for _, tt := range tests {
		display, name := Codename(tt.key)
		if display != tt.display || name != tt.name {
			t.Errorf("Codename(%q) = %q, %q; want %q, %q", tt.key, display, name, tt.display, tt.name)
		}
	}
}

func TestCodenameDeterministic(t *testing.T) {
	t.Parallel()
	d1, n1 := Codename("claude:abc")
	d2, n2 := Codename("claude:abc")
	if d1 != d2 || n1 != n2 {
		t.Errorf("Codename twice = %q, %q then %q, %q; want equal", d1, n1, d2, n2)
	}
	if d3, n3 := FreeCodename("claude:abc", nil); d3 != d1 || n3 != n1 {
		t.Errorf("FreeCodename with nothing taken = %q, %q; want %q, %q", d3, n3, d1, n1)
	}
}

func TestCodenameShape(t *testing.T) {
	t.Parallel()
	pairs := make(map[string][2]string, codenameSpace)
	for _, a := range codenameWords {
		for _, b := range codenameWords {
			pairs[a+b] = [2]string{a, b}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	distinct := map[string]bool{}
	for range 1000 {
		key := fmt.Sprintf("instance:%016x%016x", rng.Uint64(), rng.Uint64())
		display, name := Codename(key)
		pair, ok := pairs[name]
		if !ok {
			t.Fatalf("Codename(%q) name %q is not two list words fused", key, name)
		}
		if want := capitalise(pair[0]) + capitalise(pair[1]); display != want {
			t.Errorf("Codename(%q) display = %q; want %q", key, display, want)
		}
		if slug, err := letagents.AgentName(name); err != nil || slug != name {
			t.Errorf("letagents.AgentName(%q) = %q, %v; want it unchanged", name, slug, err)
		}
		distinct[name] = true
	}
	// 1000 draws from 10000 names: a skewed pick would repeat far more.
	if len(distinct) < 900 {
		t.Errorf("1000 keys gave %d distinct codenames; want at least 900", len(distinct))
	}
}

func TestCodenameAvoidsTakenNames(t *testing.T) {
	t.Parallel()
	const key = "codex:thread-1"
	sum := sha256Of(key)
	idx := codenameIndex(sum)
	first := nameAt(idx)
	second := nameAt(idx + 1)
	third := nameAt(idx + 2)

	tests := []struct {
		name  string
		taken []string
		want  string
	}{
		{"free", nil, first},
		{"unrelated taken", []string{"someone-else"}, first},
		{"first taken", []string{first}, second},
		{"first two taken", []string{first, second}, third},
		{"all tries taken", takenRun(idx, codenameTries+1), first + "-" + fmt.Sprintf("%02x%02x", sum[0], sum[1])},
		{"all but the last try taken", takenRun(idx, codenameTries), nameAt(idx + codenameTries)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			taken := map[string]bool{}
			for _, n := range tt.taken {
				taken[n] = true
			}
			_, name := FreeCodename(key, taken)
			if name != tt.want {
				t.Errorf("FreeCodename with taken %v = %q; want %q", tt.taken, name, tt.want)
			}
			if slug, err := letagents.AgentName(name); err != nil || slug != name {
				t.Errorf("letagents.AgentName(%q) = %q, %v; want it unchanged", name, slug, err)
			}
		})
	}
}

func TestCodenameWrapsAround(t *testing.T) {
	t.Parallel()
	display, name := codenameAt(codenameSpace - 1)
	if display != "WrenWren" || name != "wrenwren" {
		t.Errorf("codenameAt(last) = %q, %q; want WrenWren, wrenwren", display, name)
	}
	taken := map[string]bool{"wrenwren": true}
	// Find a key whose first choice is the last pair, to see the wrap.
	for i := range 1_000_000 {
		key := fmt.Sprintf("k%d", i)
		if codenameIndex(sha256Of(key)) == codenameSpace-1 {
			if _, got := FreeCodename(key, taken); got != "amberamber" {
				t.Errorf("FreeCodename(%q) after wrenwren = %q; want amberamber", key, got)
			}
			return
		}
	}
	t.Fatal("no key among a million has the last pair for its codename: the pick is skewed")
}

func nameAt(idx int) string {
	_, name := codenameAt(idx % codenameSpace)
	return name
}

func takenRun(idx, n int) []string {
	var out []string
	for k := range n {
		out = append(out, nameAt(idx+k))
	}
	return out
}

func sha256Of(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }
