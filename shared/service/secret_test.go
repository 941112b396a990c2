package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// fakeSecrets plays Secrets Manager: nothing real answers here.
type fakeSecrets struct {
	value *string
	err   error
	calls int
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.calls++
	return &secretsmanager.GetSecretValueOutput{SecretString: f.value, ARN: in.SecretId}, f.err
}

func TestGitHubSecret(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tests := []struct {
		name                      string
		sm                        *fakeSecrets
		wantID, wantHook, wantErr string
		wantKey                   string
	}{
		{"ok", &fakeSecrets{value: str(`{"client_id": "Iv1.abc", "client_secret": "shh"}`)}, "Iv1.abc", "", "", ""},
		{"with webhook secret", &fakeSecrets{value: str(`{"client_id": "Iv1.abc", "client_secret": "shh", "webhook_secret": "hook"}`)},
			"Iv1.abc", "hook", "", ""},
		{"with the App's key", &fakeSecrets{value: str(`{"client_id": "Iv1.abc", "client_secret": "shh", "app_private_key": "-----BEGIN RSA PRIVATE KEY-----"}`)},
			"Iv1.abc", "", "", "-----BEGIN RSA PRIVATE KEY-----"},
		{"not JSON", &fakeSecrets{value: str(`client_id=x`)}, "", "", "want the JSON", ""},
		{"no secret", &fakeSecrets{value: str(`{"client_id": "x"}`)}, "", "", "want the JSON", ""},
		{"binary secret", &fakeSecrets{}, "", "", "want the JSON", ""},
		{"unreachable", &fakeSecrets{err: errors.New("no route to host")}, "", "", "read GitHub app secret: no route to host", ""},
	}
	for _, tt := range tests {
		v, err := githubSecret(context.Background(), tt.sm, "arn:aws:secretsmanager:eu-west-1:1:secret:gh")
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || v.ClientID != tt.wantID || v.ClientSecret != "shh" || v.WebhookSecret != tt.wantHook || v.AppPrivateKey != tt.wantKey):
			t.Errorf("%s: = %+v, %v", tt.name, v, err)
		case err != nil && strings.Contains(err.Error(), "shh"):
			t.Errorf("%s: the error shows the secret: %v", tt.name, err)
		}
		if tt.sm.calls != 1 {
			t.Errorf("%s: %d calls, want one (read once per cold start)", tt.name, tt.sm.calls)
		}
	}
}
