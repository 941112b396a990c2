// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import "crypto/sha256"

// The word lists are part of the display-name contract: server and client
// must derive the same name from the same id, so entries must never be
// reordered, removed or added.
var (
	adjectives = [60]string{
		"amber", "ashen", "autumn", "birch", "bold", "brisk", "bronze", "calm",
		"cedar", "clear", "copper", "coral", "crisp", "dawn", "deep", "dusky",
		"early", "ember", "fern", "flint", "frosty", "gentle", "gilded", "golden",
		"granite", "green", "hazel", "hidden", "hollow", "ivory", "jade", "keen",
		"lively", "lunar", "maple", "mellow", "misty", "mossy", "noble", "oaken",
		"pale", "quiet", "rapid", "rugged", "rustic", "sandy", "silent", "silver",
		"slate", "snowy", "solar", "steady", "stone", "sunny", "swift", "tidal",
		"velvet", "wild", "windy", "woven",
	}
	nouns = [60]string{
		"anchor", "anvil", "aspen", "badger", "basin", "beacon", "bramble", "brook",
		"canyon", "chisel", "cliff", "comet", "cove", "crane", "creek", "delta",
		"falcon", "fjord", "forge", "fox", "glade", "grove", "harbor", "hammer",
		"heron", "hearth", "kiln", "lantern", "ledge", "loom", "marsh", "meadow",
		"mesa", "otter", "owl", "pebble", "pine", "prairie", "quarry", "raven",
		"reed", "ridge", "river", "saddle", "spruce", "summit", "thicket", "thistle",
		"timber", "trail", "tundra", "valley", "wagon", "willow", "wren", "bridge",
		"lathe", "kettle", "spindle", "harp",
	}
)

// DisplayName returns the generated display name of a room. Branch rooms
// show their branch ("Branch: <branch>") because the encoded id is
// unreadable; every other room gets a stable "adjective-noun" name derived
// from sha256(id), so it is memorable yet needs no storage.
func DisplayName(id string) string {
	if _, branch, ok := ParseBranchRoom(id); ok {
		return "Branch: " + branch
	}
	b := sha256.Sum256([]byte(id))
	return adjectives[int(b[0])%len(adjectives)] + "-" + nouns[int(b[1])%len(nouns)]
}
