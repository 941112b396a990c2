-- The GitHub App (issue 24): its installations, from its installation
-- deliveries (or, for one installed before this service heard of it, the
-- installation id other deliveries carry, with no account yet), and the
-- repositories each covers. A repository is keyed by its repo room, which
-- nobody may have opened yet: so it is no reference. A room is connected
-- to GitHub while its repository is covered (removed_at null) by an
-- installation neither suspended nor uninstalled.
CREATE TABLE github_installations (
    installation_id      bigint PRIMARY KEY CHECK (installation_id > 0),
    account_login        text,
    account_type         text,
    repository_selection text,
    suspended_at         timestamptz,
    uninstalled_at       timestamptz,
    updated_at           timestamptz NOT NULL
);

CREATE TABLE github_installation_repos (
    room_id         text PRIMARY KEY,
    full_name       text NOT NULL,
    github_repo_id  bigint,
    installation_id bigint NOT NULL REFERENCES github_installations (installation_id) ON DELETE CASCADE,
    removed_at      timestamptz,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX github_installation_repos_installation_idx ON github_installation_repos (installation_id);
