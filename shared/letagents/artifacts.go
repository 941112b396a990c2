package letagents

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Artifact providers and kinds, as stored and on the wire.
var (
	ArtifactProviders = []string{"github", "gitlab", "bitbucket", "unknown"}
	ArtifactKinds     = []string{"issue", "branch", "pull_request", "merge_request", "review", "check_run", "merge"}
)

// Limits on what an artifact may carry.
const (
	// MaxLinkedTasks bounds the task ids one publish may link.
	MaxLinkedTasks = 32
	// MaxArtifactURLBytes, MaxArtifactTitleBytes and MaxArtifactFieldBytes
	// (id, ref, state) bound an artifact's text fields.
	MaxArtifactURLBytes   = 2048
	MaxArtifactTitleBytes = 500
	MaxArtifactFieldBytes = 255
	// DefaultArtifactPage and MaxArtifactPage bound ?limit of a listing.
	DefaultArtifactPage = 100
	MaxArtifactPage     = 250
)

// Artifact is a Git workflow object a room works on: an issue, a branch, a
// pull or merge request, a review, a check run, a merge. Its db tags name
// the columns the store reads it from (by name).
type Artifact struct {
	RoomID      string    `db:"room_id"`
	IdentityKey string    `db:"identity_key"`
	Provider    string    `db:"provider"`
	Kind        string    `db:"kind"`
	ID          string    `db:"artifact_id"`     // the provider's id, "" for none
	Number      int64     `db:"artifact_number"` // 0 for none
	Title       string    `db:"title"`
	URL         string    `db:"url"`
	Ref         string    `db:"ref"`
	State       string    `db:"state"`
	Source      string    `db:"source"` // manual, task_workflow_artifact or github_event
	FirstSeenAt time.Time `db:"first_seen_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	TaskIDs     []string  `db:"task_ids"` // linked tasks, "task_N", sorted
}

// NormalizeArtifact checks an artifact before it is stored, fills its
// provider from its URL when not given, and derives its identity key:
// "<provider>:<kind>:" followed by the first of url:<url>, id:<id>,
// number:<n> and ref:<ref> it has. Republishing the same object with more
// detail therefore finds the same row.
func NormalizeArtifact(a Artifact) (Artifact, error) {
	for _, f := range []struct {
		name  string
		value *string
		max   int
	}{{"url", &a.URL, MaxArtifactURLBytes}, {"title", &a.Title, MaxArtifactTitleBytes}, {"id", &a.ID, MaxArtifactFieldBytes},
		{"ref", &a.Ref, MaxArtifactFieldBytes}, {"state", &a.State, MaxArtifactFieldBytes}} {
		*f.value = strings.TrimSpace(*f.value)
		switch {
		case len(*f.value) > f.max:
			return a, Errorf(Invalid, "artifact %s is longer than %d bytes", f.name, f.max)
		case strings.ContainsFunc(*f.value, func(r rune) bool { return r < ' ' || r == 0x7f }):
			return a, Errorf(Invalid, "artifact %s must not contain control characters", f.name)
		}
	}
	if !slices.Contains(ArtifactKinds, a.Kind) {
		return a, Errorf(Invalid, "artifact kind must be one of %s", strings.Join(ArtifactKinds, ", "))
	}
	if a.URL != "" {
		u, err := url.Parse(a.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return a, Errorf(Invalid, "artifact url must be an http(s) URL")
		}
		if a.Provider == "" {
			a.Provider = providerOf(u.Hostname())
		}
	}
	if a.Provider == "" {
		a.Provider = "unknown"
	}
	if !slices.Contains(ArtifactProviders, a.Provider) {
		return a, Errorf(Invalid, "artifact provider must be one of %s", strings.Join(ArtifactProviders, ", "))
	}
	if a.Number < 0 {
		return a, Errorf(Invalid, "artifact number must be a positive whole number")
	}
	prefix := a.Provider + ":" + a.Kind + ":"
	switch {
	case a.URL != "":
		a.IdentityKey = prefix + "url:" + a.URL
	case a.ID != "":
		a.IdentityKey = prefix + "id:" + a.ID
	case a.Number > 0:
		a.IdentityKey = prefix + "number:" + strconv.FormatInt(a.Number, 10)
	case a.Ref != "":
		a.IdentityKey = prefix + "ref:" + a.Ref
	default:
		return a, Errorf(Invalid, "artifact requires at least one stable identity: url, id, number, or ref")
	}
	if len(a.TaskIDs) > MaxLinkedTasks {
		return a, Errorf(Invalid, "linked_task_ids cannot contain more than %d entries", MaxLinkedTasks)
	}
	for _, id := range a.TaskIDs {
		if _, ok := ParseWireID(TaskPrefix, id); !ok {
			return a, Errorf(Invalid, "linked task %q is not a task id like task_7", id)
		}
	}
	slices.Sort(a.TaskIDs)
	a.TaskIDs = slices.Compact(a.TaskIDs)
	return a, nil
}

func providerOf(host string) string {
	switch strings.ToLower(host) {
	case "github.com", "www.github.com":
		return "github"
	case "gitlab.com":
		return "gitlab"
	case "bitbucket.org":
		return "bitbucket"
	}
	return "unknown"
}

// WorkflowArtifacts are the Git objects a task's work produced, as the
// original lists them on a task (workflow_artifacts): its pull request,
// when it has a pr_url, else none.
func (t Task) WorkflowArtifacts() []Artifact {
	if t.PRURL == "" {
		return []Artifact{}
	}
	return []Artifact{PullRequestArtifact(t.PRURL)}
}

// pullRequestPaths are the path shapes of a pull (or merge) request on
// the hosts the original knows, the number captured. They are compiled on
// first use, not at init: every process that links this package (the
// hook's too, which answers before main) would pay for them at start.
var pullRequestPaths = sync.OnceValue(func() map[string]pullRequestPath {
	return map[string]pullRequestPath{
		"github.com":    {"github", "pull_request", regexp.MustCompile(`^/[^/]+/[^/]+/pull/(\d+)$`)},
		"gitlab.com":    {"gitlab", "merge_request", regexp.MustCompile(`^/.+/-/merge_requests/(\d+)$`)},
		"bitbucket.org": {"bitbucket", "pull_request", regexp.MustCompile(`^/[^/]+/[^/]+/pull-requests/(\d+)$`)},
	}
})

// pullRequestPath is a host's provider, kind and path shape.
type pullRequestPath struct {
	provider, kind string
	path           *regexp.Regexp
}

// PullRequestArtifact reads a pr_url as the original does: a pull request
// of github.com or bitbucket.org, or a merge request of gitlab.com, with
// its number, when the path has that host's shape; otherwise a pull
// request of an unknown provider, known only by its URL.
func PullRequestArtifact(prURL string) Artifact {
	a := Artifact{Provider: "unknown", Kind: "pull_request", URL: prURL}
	u, err := url.Parse(prURL)
	if err != nil {
		return a
	}
	shape, ok := pullRequestPaths()[strings.ToLower(u.Hostname())]
	if !ok {
		return a
	}
	m := shape.path.FindStringSubmatch(strings.TrimRight(u.EscapedPath(), "/"))
	if m == nil {
		return a
	}
	if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
		a.Provider, a.Kind, a.Number = shape.provider, shape.kind, n
	}
	return a
}
