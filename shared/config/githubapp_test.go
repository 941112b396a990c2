package config_test

import (
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/leasecheck"
)

// The GitHub App's variables: its id, key and slug together, the key
// from one place, and the enforcement mode, the original's default
// "checks" when unset.
func TestLoadGitHubApp(t *testing.T) {
	t.Parallel()
	key := githubtest.AppKeyPEM(t)
	tests := []struct {
		name     string
		env      map[string]string
		wantMode leasecheck.Mode
		wantErr  string
	}{
		{"none", nil, leasecheck.Checks, ""},
		{"all set", map[string]string{"GITHUB_APP_ID": "4242", "GITHUB_APP_PRIVATE_KEY": key, "GITHUB_APP_SLUG": "letagents-app",
			"LETAGENTS_GITHUB_ENFORCEMENT_MODE": "close"}, leasecheck.Close, ""},
		{"escaped key", map[string]string{"GITHUB_APP_ID": "4242", "GITHUB_APP_PRIVATE_KEY": strings.ReplaceAll(key, "\n", `\n`)}, leasecheck.Checks, ""},
		{"key in the secret", map[string]string{"GITHUB_APP_ID": "4242", "GITHUB_SECRET_ARN": "arn:aws:secretsmanager:x"}, leasecheck.Checks, ""},
		{"mode any case", map[string]string{"LETAGENTS_GITHUB_ENFORCEMENT_MODE": " Flag "}, leasecheck.Flag, ""},
		{"mode off", map[string]string{"LETAGENTS_GITHUB_ENFORCEMENT_MODE": "off"}, leasecheck.Off, ""},
		{"bad mode", map[string]string{"LETAGENTS_GITHUB_ENFORCEMENT_MODE": "block"}, "", "LETAGENTS_GITHUB_ENFORCEMENT_MODE"},
		{"id not a number", map[string]string{"GITHUB_APP_ID": "letagents", "GITHUB_APP_PRIVATE_KEY": key}, "", "GITHUB_APP_ID"},
		{"id without key", map[string]string{"GITHUB_APP_ID": "4242"}, "", "GITHUB_APP_PRIVATE_KEY"},
		{"key without id", map[string]string{"GITHUB_APP_PRIVATE_KEY": key}, "", "GITHUB_APP_ID"},
		{"key not PEM", map[string]string{"GITHUB_APP_ID": "4242", "GITHUB_APP_PRIVATE_KEY": "hunter2"}, "", "GITHUB_APP_PRIVATE_KEY"},
		{"key twice", map[string]string{"GITHUB_APP_ID": "4242", "GITHUB_APP_PRIVATE_KEY": key, "GITHUB_SECRET_ARN": "arn:aws:secretsmanager:x"},
			"", "GITHUB_APP_PRIVATE_KEY"},
		{"bad slug", map[string]string{"GITHUB_APP_SLUG": "Let Agents"}, "", "GITHUB_APP_SLUG"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.Load(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one naming %s", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "PRIVATE KEY-----") || strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error shows the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.LeaseMode != tt.wantMode || c.GitHubAppID != tt.env["GITHUB_APP_ID"] {
				t.Errorf("mode %q id %q, want %q %q", c.LeaseMode, c.GitHubAppID, tt.wantMode, tt.env["GITHUB_APP_ID"])
			}
		})
	}
}
