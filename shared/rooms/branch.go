// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	branchPrefix    = "git-room:"
	branchIDPrefix  = branchPrefix + hostGitHub + ":"
	branchSeparator = ":branch:"
	// maxBranchLength mirrors the 255-byte file-name limit that loose Git
	// refs hit on most file systems, and keeps a branch room id (whose ENC
	// is 4/3 the branch length) within MaxIDLength for ordinary repos.
	maxBranchLength = 255
)

// BranchRoomID returns the id of the Git Room for one branch of a GitHub
// repository: "git-room:github.com:<owner>/<repo>:branch:<ENC>", with
// owner/repo lower-cased (GitHub treats them case-insensitively) and ENC the
// unpadded base64url encoding of the branch name. The branch is encoded
// rather than embedded because branch names are case-sensitive and may hold
// '/', which would otherwise be folded or split into path segments.
// The error wraps ErrInvalid unless locator normalizes to exactly
// github.com/<owner>/<repo> and branch is non-empty valid UTF-8 of at most
// 255 bytes, and the resulting id fits in MaxIDLength.
func BranchRoomID(locator, branch string) (string, error) {
	repo, err := gitHubLocator(locator)
	if err != nil {
		return "", err
	}
	if err := checkBranch(branch); err != nil {
		return "", err
	}
	id := branchIDPrefix + strings.TrimPrefix(repo, hostGitHub+"/") +
		branchSeparator + base64.RawURLEncoding.EncodeToString([]byte(branch))
	if err := check(id); err != nil {
		return "", err
	}
	return id, nil
}

// ParseBranchRoom splits a branch Git Room id into its canonical repo
// locator ("github.com/<owner>/<repo>") and branch name. ok is false for
// anything not of exactly that form, including an ENC that does not
// round-trip: accepting non-canonical encodings (padding, stray low bits)
// would let two ids name the same branch room.
func ParseBranchRoom(id string) (locator, branch string, ok bool) {
	rest, found := strings.CutPrefix(id, branchIDPrefix)
	if !found {
		return "", "", false
	}
	// ENC cannot contain ':', so the last separator is the real one even if
	// a repo name happens to contain ":branch:".
	sep := strings.LastIndex(rest, branchSeparator)
	if sep < 0 {
		return "", "", false
	}
	enc := rest[sep+len(branchSeparator):]
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != enc {
		return "", "", false
	}
	branch = string(raw)
	if checkBranch(branch) != nil {
		return "", "", false
	}
	rawLocator := hostGitHub + "/" + rest[:sep]
	locator, err = gitHubLocator(rawLocator)
	// Only case may differ from the canonical locator; anything Normalize
	// would strip or rewrite means the id was not built by BranchRoomID.
	if err != nil || locator != lowerASCII(rawLocator) {
		return "", "", false
	}
	return locator, branch, true
}

// gitHubLocator normalizes locator and requires the result to be a GitHub
// host/owner/repo locator, the only kind Git Rooms are defined for.
func gitHubLocator(locator string) (string, error) {
	repo, err := Normalize(locator)
	if err != nil {
		return "", err
	}
	if !IsRepoLocator(repo) || !strings.HasPrefix(repo, hostGitHub+"/") {
		return "", invalid(fmt.Sprintf("%q is not a %s owner/repo locator", repo, hostGitHub))
	}
	return repo, nil
}

func checkBranch(branch string) error {
	switch {
	case branch == "":
		return invalid("branch name is empty")
	case len(branch) > maxBranchLength:
		return invalid(fmt.Sprintf("branch name is longer than %d bytes", maxBranchLength))
	case !utf8.ValidString(branch):
		return invalid("branch name is not valid UTF-8")
	}
	return nil
}
