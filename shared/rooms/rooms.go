// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/letagents/letagents-go/shared/letagents"
)

// MaxIDLength bounds a canonical id in bytes so it fits comfortably in
// database keys and URL paths.
const MaxIDLength = 512

// MaxSegments bounds the '/'-separated segments of a canonical id: deep
// enough for a GitLab project in nested groups (host, a group and up to
// 20 subgroups, the project). github.com and bitbucket.org ids have at
// most RepoSegments: a deeper path there is a page of a repository, not a
// repository.
const MaxSegments = 24

// RepoSegments is the number of segments of host/owner/repo.
const RepoSegments = 3

// PathSegments is how many segments of a room id a URL may keep as path
// segments: API Gateway's routes spell a room out as one to PathSegments
// segments (a greedy variable may only end a route), so a deeper id must
// be percent-encoded whole (PathOf).
const PathSegments = 3

// ErrInvalid is wrapped by every validation error so callers can map any
// of them to a single client error with errors.Is.
var ErrInvalid = errors.New("invalid room id")

func invalid(msg string) error {
	return fmt.Errorf("%w: %s", ErrInvalid, msg)
}

// Hosts whose case is folded: GitHub treats the whole locator
// case-insensitively, GitLab and Bitbucket only the host name.
const (
	hostGitHub    = "github.com"
	hostGitLab    = "gitlab.com"
	hostBitbucket = "bitbucket.org"
)

// Normalize returns the canonical room id for what a user or client typed,
// or an error wrapping ErrInvalid. Clone URLs of the same repository
// (https, ssh, scp-like "git@host:path", with or without ".git") map to one
// id so agents that cloned it different ways still meet in the same room;
// invite codes are upper-cased, github.com ids lower-cased, gitlab.com and
// bitbucket.org ids get a lower-case host, and other ids keep their case.
// Normalize is idempotent: a canonical id normalizes to itself.
func Normalize(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", invalid("room id is not valid UTF-8")
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		return "", invalid("room id contains a control character")
	}
	s = stripPrefixes(s)
	s = scpToPath(s)
	s = stripSuffixes(s)
	s = foldCase(s)
	if hasPrefixFold(s, branchPrefix) {
		// Any casing of the prefix is routed here so that look-alikes
		// such as "GIT-ROOM:..." cannot be created as named rooms.
		locator, branch, ok := ParseBranchRoom(s)
		if !ok {
			return "", invalid("malformed branch room id")
		}
		return BranchRoomID(locator, branch)
	}
	if err := check(s); err != nil {
		return "", err
	}
	return s, nil
}

// stripPrefixes removes URL schemes, and with them the authority's user
// (and password: a clone URL may carry a token, which must never become
// part of a room id) and port. It repeats until nothing changes, because
// one pass could leave a further scheme or white space in front, and
// Normalize must reach a fixed point in one call.
func stripPrefixes(s string) string {
	for {
		before := s
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		for _, scheme := range []string{"https://", "http://", "ssh://"} {
			if hasPrefixFold(s, scheme) {
				s = stripAuthority(s[len(scheme):])
				break
			}
		}
		if s == before {
			return s
		}
	}
}

// stripAuthority drops the user and port of the authority (before the
// first '/') of a URL whose scheme is gone. A colon followed by anything
// but a port is scp syntax written as a URL ("https://git@host:owner/r"):
// the colon separates host and path.
func stripAuthority(s string) string {
	authority, path := s, ""
	if slash := strings.IndexByte(s, '/'); slash >= 0 {
		authority, path = s[:slash], s[slash:]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:]
	}
	if host, rest, ok := strings.Cut(authority, ":"); ok && rest != "" {
		if isDigits(rest) {
			authority = host
		} else {
			authority = host + "/" + rest
		}
	}
	return authority + path
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// scpToPath turns scp-like "user@host:path" into "host/path". The user may
// not contain '/' or ':' so that ids which merely contain an '@' (such as a
// branch room id whose owner has one) are not mistaken for scp syntax.
func scpToPath(s string) string {
	at := strings.IndexByte(s, '@')
	if at <= 0 || strings.ContainsAny(s[:at], "/:") {
		return s
	}
	host, path, ok := strings.Cut(s[at+1:], ":")
	if !ok || !isHostName(host) || path == "" || path[0] == '/' {
		return s
	}
	return host + "/" + path
}

// stripSuffixes removes trailing slashes, white space and ".git". It
// repeats until nothing changes because removing one can expose another
// ("r.git/", "r/.git", "r.git.git"), and Normalize must be idempotent.
func stripSuffixes(s string) string {
	for {
		before := s
		s = strings.TrimRightFunc(s, unicode.IsSpace)
		s = strings.TrimRight(s, "/")
		if hasSuffixFold(s, ".git") {
			s = s[:len(s)-len(".git")]
		}
		if s == before {
			return s
		}
	}
}

// foldCase applies the case rules. Folding is ASCII-only: host names and
// GitHub owner/repo names are ASCII, and ASCII folding never changes the
// byte length or creates a new match for the case-insensitive rules above,
// which keeps Normalize idempotent.
func foldCase(s string) string {
	if IsInviteCode(s) {
		return upperASCII(s)
	}
	host, _, _ := strings.Cut(s, "/")
	switch lowerASCII(host) {
	case hostGitHub:
		return lowerASCII(s)
	case hostGitLab, hostBitbucket:
		return lowerASCII(host) + s[len(host):]
	}
	return s
}

// check enforces the limits every canonical id must satisfy.
func check(id string) error {
	if id == "" {
		return invalid("room id is empty")
	}
	if len(id) > MaxIDLength {
		return invalid(fmt.Sprintf("room id is longer than %d bytes", MaxIDLength))
	}
	n := strings.Count(id, "/") + 1
	if n > MaxSegments {
		return invalid(fmt.Sprintf("room id has more than %d path segments", MaxSegments))
	}
	// foldCase has lower-cased these hosts.
	if host, _, _ := strings.Cut(id, "/"); n > RepoSegments && (host == hostGitHub || host == hostBitbucket) {
		return invalid(fmt.Sprintf("room id has more than %d path segments: a %s room is %s/owner/repo", RepoSegments, host, host))
	}
	for seg := range strings.SplitSeq(id, "/") {
		switch seg {
		case "":
			return invalid("room id has an empty path segment")
		case ".", "..":
			return invalid(`room id has a "." or ".." path segment`)
		}
	}
	return nil
}

// KindOf classifies a canonical id. Ids that are not canonical are still
// classified, by shape only.
func KindOf(id string) letagents.RoomKind {
	if _, _, ok := ParseBranchRoom(id); ok {
		return letagents.RoomBranch
	}
	if IsInviteCode(id) {
		return letagents.RoomInvite
	}
	if IsRepoLocator(id) {
		return letagents.RoomRepo
	}
	return letagents.RoomNamed
}

// IsRepoLocator reports whether id is a host name ([A-Za-z0-9.-]+
// containing a dot) followed by at least two non-empty '/'-separated
// segments, the host/owner/repo shape that ties a room to a repository
// (the owner may be a GitLab group path, group/subgroup; on github.com and
// bitbucket.org it is one segment).
func IsRepoLocator(id string) bool {
	parts := strings.Split(id, "/")
	if len(parts) < RepoSegments || !isHostName(parts[0]) {
		return false
	}
	if host := lowerASCII(parts[0]); len(parts) > RepoSegments && (host == hostGitHub || host == hostBitbucket) {
		return false
	}
	return !slices.Contains(parts[1:], "")
}

// SplitRepoLocator splits a repo locator into its host, its owner (every
// segment between host and repository: a GitLab group path keeps its
// slashes) and its repository name.
func SplitRepoLocator(locator string) (host, owner, repo string) {
	host, rest, _ := strings.Cut(locator, "/")
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		return host, rest[:i], rest[i+1:]
	}
	return host, rest, ""
}

// PathOf writes a room id as it goes in a URL path (after /rooms/ or
// /in/): its segments escaped and joined by '/' when it has at most
// PathSegments, else the whole id escaped as one segment, which every
// route takes, through API Gateway too.
func PathOf(id string) string {
	segs := strings.Split(id, "/")
	if len(segs) > PathSegments {
		return url.PathEscape(id)
	}
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// isHostName reports whether s looks like a DNS host name; the dot is what
// tells "github.com/o/r" apart from a named room such as "team/a/b".
func isHostName(s string) bool {
	if !strings.Contains(s, ".") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnumASCII(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnumASCII(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// lowerASCII works byte-wise, which is safe on UTF-8 because every byte of
// a multi-byte sequence is >= 0x80.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// hasPrefixFold compares ASCII-case-insensitively; prefix must be lower-case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && lowerASCII(s[:len(prefix)]) == prefix
}

// hasSuffixFold compares ASCII-case-insensitively; suffix must be lower-case.
func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && lowerASCII(s[len(s)-len(suffix):]) == suffix
}
