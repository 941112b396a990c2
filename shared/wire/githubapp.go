package wire

// GitHubIntegration is GET /rooms/{room}/integrations/github: whether
// the service has a GitHub App and whether it covers the room's
// repository, in the original's shape. access_room_id is the repo room
// a branch room's repository is known by.
type GitHubIntegration struct {
	RoomID                 string                 `json:"room_id"`
	AccessRoomID           string                 `json:"access_room_id"`
	Configured             bool                   `json:"configured"`
	InstallURLAvailable    bool                   `json:"install_url_available"`
	SetupManifestAvailable bool                   `json:"setup_manifest_available"`
	AppSlug                *string                `json:"app_slug"`
	SetupURL               *string                `json:"setup_url"`
	InstallURL             *string                `json:"install_url"`
	EnforcementMode        string                 `json:"enforcement_mode"`
	Connected              bool                   `json:"connected"`
	Repository             *GitHubAppRepository   `json:"repository"`
	Installation           *GitHubAppInstallation `json:"installation"`
}

// GitHubAppRepository is the room's repository as an installation
// covers it (removed_at set once it no longer does).
type GitHubAppRepository struct {
	GitHubRepoID   *string `json:"github_repo_id"`
	FullName       string  `json:"full_name"`
	RoomID         string  `json:"room_id"`
	RemovedAt      *string `json:"removed_at"`
	InstallationID string  `json:"installation_id"`
	UpdatedAt      string  `json:"updated_at"`
}

// GitHubAppInstallation is the installation covering the repository.
type GitHubAppInstallation struct {
	InstallationID      string  `json:"installation_id"`
	TargetLogin         *string `json:"target_login"`
	TargetType          *string `json:"target_type"`
	RepositorySelection *string `json:"repository_selection"`
	SuspendedAt         *string `json:"suspended_at"`
	UninstalledAt       *string `json:"uninstalled_at"`
	LastSyncedAt        string  `json:"last_synced_at"`
}

// GitHubInstallURL is POST /rooms/{room}/integrations/github/install-url.
type GitHubInstallURL struct {
	RoomID     string `json:"room_id"`
	InstallURL string `json:"install_url"`
	SetupURL   string `json:"setup_url"`
	State      string `json:"state"`
}
