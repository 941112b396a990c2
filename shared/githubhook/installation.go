package githubhook

import (
	"fmt"

	"github.com/letagents/letagents-go/shared/rooms"
)

// Event names of the GitHub App's own deliveries.
const (
	EventInstallation             = "installation"
	EventInstallationRepositories = "installation_repositories"
)

// InstallationChange is what an installation or
// installation_repositories delivery says of the App's reach: the
// installation (its account, all repositories or selected ones) and the
// repositories it now covers (Added) or no longer covers (Removed). An
// installation created lists its repositories as Added; one deleted
// covers none any more, whichever it named.
type InstallationChange struct {
	ID          int64
	Action      string // created, deleted, suspend, unsuspend, added, removed, ...
	Account     string
	AccountType string // User or Organization
	Selection   string // all or selected
	Added       []Repository
	Removed     []Repository
}

// Repository is a repository an installation names: GitHub's id, its
// owner/name and its repo room.
type Repository struct {
	ID       int64
	FullName string
	RoomID   string
}

type (
	installation struct {
		ID      int64 `json:"id"`
		Account struct {
			Login string `json:"login"`
			Type  string `json:"type"`
		} `json:"account"`
		RepositorySelection string `json:"repository_selection"`
	}
	repository struct {
		ID       int64  `json:"id"`
		FullName string `json:"full_name"`
	}
)

// installationChange reads an installation's delivery (nil for other
// kinds); one naming no installation, or a repository that is no
// owner/name, is no payload GitHub sends.
func (p payload) installationChange(eventName string) (*InstallationChange, error) {
	if eventName != EventInstallation && eventName != EventInstallationRepositories {
		return nil, nil
	}
	in := p.Installation
	if in.ID <= 0 {
		return nil, fmt.Errorf("an %s delivery without installation.id", eventName)
	}
	c := &InstallationChange{ID: in.ID, Action: p.Action, Account: in.Account.Login, AccountType: in.Account.Type,
		Selection: in.RepositorySelection}
	added := p.RepositoriesAdded
	if eventName == EventInstallation && p.Action == "created" {
		added = p.Repositories
	}
	var err error
	if c.Added, err = repositories(added); err != nil {
		return nil, err
	}
	if c.Removed, err = repositories(p.RepositoriesRemoved); err != nil {
		return nil, err
	}
	return c, nil
}

func repositories(in []repository) ([]Repository, error) {
	out := make([]Repository, 0, len(in))
	for _, r := range in {
		room, err := rooms.Normalize("github.com/" + r.FullName)
		if err != nil || !rooms.IsRepoLocator(room) {
			return nil, fmt.Errorf("repository full_name %q is not owner/repo", r.FullName)
		}
		out = append(out, Repository{ID: r.ID, FullName: r.FullName, RoomID: room})
	}
	return out, nil
}
