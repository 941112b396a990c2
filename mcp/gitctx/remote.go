package gitctx

import (
	"strings"

	"github.com/letagents/letagents-go/shared/rooms"
)

// RemoteRoom returns the repo room (host/owner/repo, canonical per
// rooms.Normalize) that a git remote URL names, and false when the remote is
// not a hosted repository (a local path, file://, a remote helper, or a path
// that is not owner/repo: on GitLab and other hosts the owner may be a
// group path, group/subgroup).
//
// It reduces the URL to host/path before rooms.Normalize, because Normalize
// keeps what git URLs may carry but a room id must not: credentials in an
// https authority ("https://user:token@host/..." would otherwise become a
// room id holding the token), a port ("ssh://git@host:22/..."), and schemes
// it does not know (git://, git+ssh://). Without "://" the remote follows
// git's own rule: scp-like "[user@]host:path" when a ':' comes before any
// '/', else a local path.
func RemoteRoom(remote string) (string, bool) {
	s := strings.TrimSpace(remote)
	var host, path string
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		switch strings.ToLower(scheme) {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return "", false
		}
		authority, p, _ := strings.Cut(rest, "/")
		host, path = stripPort(stripUser(authority)), p
	} else {
		colon := strings.IndexByte(s, ':')
		if colon <= 0 || strings.Contains(s[:colon], "/") {
			return "", false
		}
		host, path = stripUser(s[:colon]), s[colon+1:]
	}
	if host == "" || path == "" {
		return "", false
	}
	room, err := rooms.Normalize(host + "/" + path)
	if err != nil || !rooms.IsRepoLocator(room) {
		return "", false
	}
	return room, true
}

// stripUser drops "user@" or "user:password@"; the last '@' ends the user
// part because a host name cannot contain one.
func stripUser(authority string) string {
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		return authority[at+1:]
	}
	return authority
}

// stripPort drops a trailing ":<digits>" (or a bare ':'): the same
// repository is reachable on any port, so the port must not split the room.
func stripPort(host string) string {
	colon := strings.LastIndexByte(host, ':')
	if colon < 0 {
		return host
	}
	for _, c := range host[colon+1:] {
		if c < '0' || c > '9' {
			return host
		}
	}
	return host[:colon]
}
