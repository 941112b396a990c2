// Package actors owns how agents are named, on the server and in the MCP
// client alike: codenames for agents without a name, and the actor label
// ("Name | Owner's agent | IDE") every message and task carries.
package actors

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// codenameWords are the words codenames are fused from.
//
// The list is a contract: a codename is picked by position, so an agent
// keeps its name across restarts only while every word stays where it is.
// Never reorder, remove, insert or replace entries, and keep exactly 100.
var codenameWords = [...]string{
	"amber", "aspen", "autumn", "badger", "bay", "birch", "bloom", "brook", "canyon", "cedar",
	"cliff", "cloud", "clover", "comet", "coral", "cove", "crane", "creek", "dawn", "delta",
	"dew", "dune", "eagle", "elm", "ember", "fern", "finch", "fjord", "flint", "forest",
	"fox", "frost", "glacier", "glade", "grove", "harbor", "hawk", "hazel", "heath", "heron",
	"hill", "island", "ivy", "juniper", "kestrel", "lake", "larch", "lark", "laurel", "leaf",
	"lichen", "lily", "lotus", "maple", "marsh", "meadow", "mesa", "mist", "moss", "moon",
	"oak", "ocean", "orchid", "otter", "owl", "pebble", "pine", "plain", "pond", "prairie",
	"rain", "raven", "reed", "ridge", "river", "robin", "sage", "shore", "sky", "snow",
	"sparrow", "spring", "spruce", "star", "stone", "storm", "summit", "sun", "thistle", "thunder",
	"tide", "timber", "trail", "valley", "willow", "wind", "winter", "wolf", "wood", "wren",
}

const (
	wordCount = len(codenameWords)
	// codenameSpace is the number of distinct codenames.
	codenameSpace = wordCount * wordCount
	// codenameTries bounds how many further codenames are tried when the
	// first is taken, before falling back to a hash suffix.
	codenameTries = 50
)

// Codename returns the codename of a key (an agent's runtime key on the
// client, its canonical key on the server): display is two capitalised words fused ("RiverValley"),
// name its lower-case slug ("rivervalley"). The pick is deterministic:
// the first four bytes of SHA-256(key), big-endian, modulo 100×100 select
// the pair. It is the first choice only; FreeCodename moves on when the
// name is already taken.
func Codename(key string) (display, name string) {
	return codenameAt(codenameIndex(sha256.Sum256([]byte(key))))
}

// FreeCodename is the codename of key that is not in taken (a set of
// lower-case names): the first choice, else up to 50 later ones, else the
// first choice with "-" and four hex digits of the hash.
func FreeCodename(key string, taken map[string]bool) (display, name string) {
	sum := sha256.Sum256([]byte(key))
	idx := codenameIndex(sum)
	for k := range codenameTries + 1 {
		display, name = codenameAt((idx + k) % codenameSpace)
		if !taken[name] {
			return display, name
		}
	}
	display, name = codenameAt(idx)
	suffix := "-" + hex.EncodeToString(sum[:2])
	return display + suffix, name + suffix
}

func codenameIndex(sum [sha256.Size]byte) int {
	return int(binary.BigEndian.Uint32(sum[:4]) % uint32(codenameSpace))
}

func codenameAt(idx int) (display, name string) {
	first, second := codenameWords[idx/wordCount], codenameWords[idx%wordCount]
	return capitalise(first) + capitalise(second), first + second
}

// capitalise upper-cases the first letter of a lower-case ASCII word.
func capitalise(w string) string {
	return strings.ToUpper(w[:1]) + w[1:]
}
