package githubtest

// Payloads of the GitHub App's own deliveries: an installation created,
// deleted, suspended..., and repositories added to it or removed.

func installationPayload(id int64, account string) map[string]any {
	return map[string]any{"id": id, "account": map[string]any{"login": account, "type": "Organization", "id": 3001},
		"repository_selection": "selected", "target_type": "Organization",
		"permissions": map[string]string{"checks": "write", "pull_requests": "write", "issues": "write", "metadata": "read"}}
}

func repoList(repos []string) []any {
	out := []any{}
	for i, r := range repos {
		out = append(out, map[string]any{"id": 5001 + i, "full_name": r, "name": r, "private": false})
	}
	return out
}

// InstallationEvent is an installation delivery's payload (action
// created, deleted, suspend, unsuspend...) for installation id on the
// account, naming repos (GitHub lists them on created and deleted).
func InstallationEvent(action string, id int64, account string, repos ...string) map[string]any {
	return map[string]any{"action": action, "installation": installationPayload(id, account), "repositories": repoList(repos),
		"sender": map[string]any{"login": account + "-admin"}}
}

// InstallationReposEvent is an installation_repositories delivery's
// payload: repos added to installation id (action added) or removed
// (action removed).
func InstallationReposEvent(action string, id int64, account string, repos ...string) map[string]any {
	p := map[string]any{"action": action, "installation": installationPayload(id, account), "repository_selection": "selected",
		"repositories_added": []any{}, "repositories_removed": []any{}, "sender": map[string]any{"login": account + "-admin"}}
	key := "repositories_added"
	if action == "removed" {
		key = "repositories_removed"
	}
	p[key] = repoList(repos)
	return p
}
