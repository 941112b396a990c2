package letagents

import (
	"reflect"
	"testing"
)

// TestWorkflowArtifacts pins how the original reads a task's pr_url into
// its workflow_artifacts.
func TestWorkflowArtifacts(t *testing.T) {
	t.Parallel()
	unknown := func(u string) []Artifact { return []Artifact{{Provider: "unknown", Kind: "pull_request", URL: u}} }
	tests := []struct {
		prURL string
		want  []Artifact
	}{
		{"", []Artifact{}},
		{"https://github.com/o/r/pull/7", []Artifact{{Provider: "github", Kind: "pull_request", Number: 7, URL: "https://github.com/o/r/pull/7"}}},
		{"https://GitHub.com/o/r/pull/7/", []Artifact{{Provider: "github", Kind: "pull_request", Number: 7, URL: "https://GitHub.com/o/r/pull/7/"}}},
		{"https://gitlab.com/g/sub/r/-/merge_requests/12", []Artifact{{Provider: "gitlab", Kind: "merge_request", Number: 12,
			URL: "https://gitlab.com/g/sub/r/-/merge_requests/12"}}},
		{"https://bitbucket.org/o/r/pull-requests/3", []Artifact{{Provider: "bitbucket", Kind: "pull_request", Number: 3,
			URL: "https://bitbucket.org/o/r/pull-requests/3"}}},
		{"https://github.com/o/r/pull/7/files", unknown("https://github.com/o/r/pull/7/files")},
		{"https://github.com/o/r/issues/7", unknown("https://github.com/o/r/issues/7")},
		{"https://www.github.com/o/r/pull/7", unknown("https://www.github.com/o/r/pull/7")},
		{"https://x.test/2", unknown("https://x.test/2")},
	}
	for _, tt := range tests {
		if got := (Task{PRURL: tt.prURL}).WorkflowArtifacts(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("pr_url %q: workflow artifacts %+v, want %+v", tt.prURL, got, tt.want)
		}
	}
}
