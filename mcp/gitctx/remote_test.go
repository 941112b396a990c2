package gitctx

import "testing"

func TestRemoteRoom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		remote string
		want   string // "" means not a repo room
	}{
		{"git@github.com:BrosInCode/letagents.git", "github.com/brosincode/letagents"},
		{"https://github.com/Owner/Repo.git", "github.com/owner/repo"},
		{"https://github.com/Owner/Repo/", "github.com/owner/repo"},
		{"https://github.com/Owner/Repo", "github.com/owner/repo"},
		{"http://github.com/Owner/Repo.git", "github.com/owner/repo"},
		{"HTTPS://GitHub.com/Owner/Repo.git", "github.com/owner/repo"},
		{"ssh://git@github.com/Owner/Repo.git", "github.com/owner/repo"},
		{"ssh://git@github.com:22/Owner/Repo.git", "github.com/owner/repo"},
		{"ssh://github.com/Owner/Repo.git", "github.com/owner/repo"},
		{"https://github.com:443/Owner/Repo.git", "github.com/owner/repo"},
		{"git+ssh://git@github.com/o/r.git", "github.com/o/r"},
		{"git://github.com/o/r.git", "github.com/o/r"},
		{"https://user:token@github.com/o/r.git", "github.com/o/r"},
		{"https://x-access-token:ghp_abc@github.com/o/r", "github.com/o/r"},
		{"github.com:Owner/Repo.git", "github.com/owner/repo"},
		{"  git@github.com:o/r.git\n", "github.com/o/r"},
		{"ssh://git@gitlab.com/team/project.git", "gitlab.com/team/project"},
		{"https://GitLab.com/Team/Project.git", "gitlab.com/Team/Project"},
		{"git@bitbucket.org:Team/Repo.git", "bitbucket.org/Team/Repo"},
		{"git@ghe.example.com:Org/Repo.git", "ghe.example.com/Org/Repo"},
		{"https://ghe.example.com:8443/Org/Repo.git", "ghe.example.com/Org/Repo"},

		{"/srv/git/repo.git", ""},
		{"../repo.git", ""},
		{"repo", ""},
		{"github.com/o/r", ""}, // no scheme and no ':' is a local path to git
		{"file:///srv/git/repo.git", ""},
		{"ext::ssh -i key host %S repo", ""},
		{`C:\repos\r.git`, ""},
		{"C:/repos/r.git", ""},
		{"git@github.com:/abs/path.git", ""},
		{"https://gitlab.com/group/sub/project.git", "gitlab.com/group/sub/project"}, // GitLab subgroups
		{"git@gitlab.com:Group/Sub/Project.git", "gitlab.com/Group/Sub/Project"},
		{"https://github.com/o/r/extra.git", ""}, // GitHub repositories are owner/repo
		{"https://github.com/owner", ""},
		{"https://github.com/", ""},
		{"https://github.com", ""},
		{"git@localhost:o/r.git", ""}, // not a dotted host name
		{"git@github.com:", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			t.Parallel()
			got, ok := RemoteRoom(tt.remote)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("RemoteRoom(%q) = %q, %v; want %q, %v", tt.remote, got, ok, tt.want, tt.want != "")
			}
		})
	}
}
