package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/config"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		check   func(config.Config) bool
		wantErr string
	}{
		{"defaults", nil, func(c config.Config) bool {
			return c.PollMax == 180*time.Second && c.GatewayHold == 25*time.Second && c.Addr == ":3001" && c.DB.MaxConns == 0
		}, ""},
		{"all set", map[string]string{"DB_URL": "postgres://x", "DB_MAX_CONNS": "4", "LETAGENTS_POLL_MAX_MS": "1000",
			"LETAGENTS_GATEWAY_HOLD_MS": "20000", "PORT": "8080", "LOG_LEVEL": "debug"}, func(c config.Config) bool {
			return c.DB.URL == "postgres://x" && c.DB.MaxConns == 4 && c.PollMax == time.Second && c.GatewayHold == 20*time.Second &&
				c.Addr == ":8080" && c.LogLevel.String() == "DEBUG"
		}, ""},
		{"poll max too small", map[string]string{"LETAGENTS_POLL_MAX_MS": "999"}, nil, "LETAGENTS_POLL_MAX_MS"},
		{"poll max too large", map[string]string{"LETAGENTS_POLL_MAX_MS": "86400001"}, nil, "LETAGENTS_POLL_MAX_MS"},
		{"poll max not a number", map[string]string{"LETAGENTS_POLL_MAX_MS": "3m"}, nil, "LETAGENTS_POLL_MAX_MS"},
		{"gateway hold over 29 s", map[string]string{"LETAGENTS_GATEWAY_HOLD_MS": "30000"}, nil, "LETAGENTS_GATEWAY_HOLD_MS"},
		{"bad max conns", map[string]string{"DB_MAX_CONNS": "0"}, nil, "DB_MAX_CONNS"},
		{"bad port", map[string]string{"PORT": "http"}, nil, "PORT"},
		{"bad log level", map[string]string{"LOG_LEVEL": "loud"}, nil, "LOG_LEVEL"},
		{"sign-in defaults", nil, func(c config.Config) bool {
			return c.RepoAccess && c.JoinLimit == 10 && c.InviteRoomLimit == 30 && c.SendLimit == 600 &&
				c.BaseURL == "" && c.KMSKeyID == "" && c.TokenKeyFile == ""
		}, ""},
		{"sign-in set", map[string]string{"GITHUB_CLIENT_ID": "id", "GITHUB_CLIENT_SECRET": "secret", "GITHUB_OAUTH_SCOPES": "read:user",
			"GITHUB_OAUTH_URL": "http://127.0.0.1:9/", "GITHUB_API_URL": "http://127.0.0.1:9", "LETAGENTS_TOKEN_KEY_FILE": "/tmp/k",
			"LETAGENTS_BASE_URL": "https://chat.example.com/", "PUBLIC_API_URL": "https://api.example.com", "LETAGENTS_REPO_ACCESS": "open",
			"LETAGENTS_JOIN_LIMIT": "50", "LETAGENTS_INVITE_ROOM_LIMIT": "5", "LETAGENTS_SEND_LIMIT": "1000000"}, func(c config.Config) bool {
			return c.GitHub.ClientID == "id" && c.GitHub.ClientSecret == "secret" && c.GitHub.Scopes == "read:user" &&
				c.GitHub.OAuthURL == "http://127.0.0.1:9/" && c.TokenKeyFile == "/tmp/k" && c.BaseURL == "https://chat.example.com" &&
				!c.RepoAccess && c.JoinLimit == 50 && c.InviteRoomLimit == 5 && c.SendLimit == 1_000_000
		}, ""},
		{"GitHub app twice", map[string]string{"GITHUB_CLIENT_ID": "id", "GITHUB_SECRET_ARN": "arn:aws:secretsmanager:x"}, nil, "GITHUB_SECRET_ARN"},
		{"two token keys", map[string]string{"LETAGENTS_KMS_KEY_ID": "k", "LETAGENTS_TOKEN_KEY_FILE": "/tmp/k"}, nil, "LETAGENTS_TOKEN_KEY_FILE"},
		{"base URL not a URL", map[string]string{"LETAGENTS_BASE_URL": "chat.example.com"}, nil, "LETAGENTS_BASE_URL"},
		{"GitHub API not a URL", map[string]string{"GITHUB_API_URL": "localhost"}, nil, "GITHUB_API_URL"},
		{"bad repo access", map[string]string{"LETAGENTS_REPO_ACCESS": "closed"}, nil, "LETAGENTS_REPO_ACCESS"},
		{"bad join limit", map[string]string{"LETAGENTS_JOIN_LIMIT": "0"}, nil, "LETAGENTS_JOIN_LIMIT"},
		{"bad invite room limit", map[string]string{"LETAGENTS_INVITE_ROOM_LIMIT": "ten"}, nil, "LETAGENTS_INVITE_ROOM_LIMIT"},
		{"send limit too large", map[string]string{"LETAGENTS_SEND_LIMIT": "1000001"}, nil, "LETAGENTS_SEND_LIMIT"},
		{"body timeout default", nil, func(c config.Config) bool { return c.BodyTimeout == 30*time.Second }, ""},
		{"body timeout set", map[string]string{"LETAGENTS_BODY_TIMEOUT_MS": "1000"}, func(c config.Config) bool { return c.BodyTimeout == time.Second }, ""},
		{"body timeout too small", map[string]string{"LETAGENTS_BODY_TIMEOUT_MS": "999"}, nil, "LETAGENTS_BODY_TIMEOUT_MS"},
		{"body timeout too large", map[string]string{"LETAGENTS_BODY_TIMEOUT_MS": "600001"}, nil, "LETAGENTS_BODY_TIMEOUT_MS"},
		{"idle timeout default", nil, func(c config.Config) bool { return c.IdleTimeout == 2*time.Minute }, ""},
		{"idle timeout above a load balancer's", map[string]string{"LETAGENTS_IDLE_TIMEOUT_MS": "1020000"},
			func(c config.Config) bool { return c.IdleTimeout == 1020*time.Second }, ""},
		{"idle timeout too large", map[string]string{"LETAGENTS_IDLE_TIMEOUT_MS": "7200001"}, nil, "LETAGENTS_IDLE_TIMEOUT_MS"},
		{"proxy hops default", nil, func(c config.Config) bool { return c.ProxyHops == 0 }, ""},
		{"proxy hops behind a load balancer", map[string]string{"LETAGENTS_PROXY_HOPS": "1"}, func(c config.Config) bool { return c.ProxyHops == 1 }, ""},
		{"proxy hops negative", map[string]string{"LETAGENTS_PROXY_HOPS": "-1"}, nil, "LETAGENTS_PROXY_HOPS"},
		{"proxy hops too many", map[string]string{"LETAGENTS_PROXY_HOPS": "6"}, nil, "LETAGENTS_PROXY_HOPS"},
		{"dev origins", map[string]string{"LETAGENTS_DEV_ORIGINS": "http://localhost:3000, http://127.0.0.1:5173,http://[::1]:8080"},
			func(c config.Config) bool {
				return slices.Equal(c.DevOrigins, []string{"http://localhost:3000", "http://127.0.0.1:5173", "http://[::1]:8080"})
			}, ""},
		{"dev origins with a local base URL", map[string]string{"LETAGENTS_DEV_ORIGINS": "http://localhost:3000", "LETAGENTS_BASE_URL": "http://localhost:3001"},
			func(c config.Config) bool { return len(c.DevOrigins) == 1 }, ""},
		{"dev origins on a public service", map[string]string{"LETAGENTS_DEV_ORIGINS": "http://localhost:3000", "LETAGENTS_BASE_URL": "https://chat.example.com"},
			nil, "LETAGENTS_DEV_ORIGINS"},
		{"dev origin not on this machine", map[string]string{"LETAGENTS_DEV_ORIGINS": "https://letagents.chat"}, nil, "LETAGENTS_DEV_ORIGINS"},
		{"dev origin with a path", map[string]string{"LETAGENTS_DEV_ORIGINS": "http://localhost:3000/app"}, nil, "LETAGENTS_DEV_ORIGINS"},
		{"dev origin not a URL", map[string]string{"LETAGENTS_DEV_ORIGINS": "localhost:3000"}, nil, "LETAGENTS_DEV_ORIGINS"},
		{"database address beside the secret", map[string]string{"DB_SECRET_ARN": "arn:aws:secretsmanager:x", "DB_HOST": "c.cluster-x.rds.amazonaws.com",
			"DB_PORT": "5432", "DB_NAME": "letagents"}, func(c config.Config) bool {
			return c.DB.SecretARN == "arn:aws:secretsmanager:x" && c.DB.Host == "c.cluster-x.rds.amazonaws.com" && c.DB.Port == "5432" && c.DB.Name == "letagents"
		}, ""},
		{"proxy host", map[string]string{"DB_PROXY_HOST": "p.proxy-x.eu-west-1.rds.amazonaws.com"},
			func(c config.Config) bool { return c.DB.ProxyHost == "p.proxy-x.eu-west-1.rds.amazonaws.com" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(cfg) {
				t.Fatalf("Load = %+v, %v", cfg, err)
			}
		})
	}
}

func TestCheckLocalOwner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string // "" when allowed
	}{
		{"off", map[string]string{"GITHUB_CLIENT_ID": "x", "GITHUB_CLIENT_SECRET": "y"}, ""},
		{"on with every room open", map[string]string{"LETAGENTS_LOCAL_OWNER": "on", "LETAGENTS_REPO_ACCESS": "open"}, ""},
		{"on with a GitHub app", map[string]string{"LETAGENTS_LOCAL_OWNER": "on", "LETAGENTS_REPO_ACCESS": "open",
			"GITHUB_CLIENT_ID": "x", "GITHUB_CLIENT_SECRET": "y"}, "sign-in off"},
		{"on with the GitHub app in Secrets Manager", map[string]string{"LETAGENTS_LOCAL_OWNER": "on", "LETAGENTS_REPO_ACCESS": "open",
			"GITHUB_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:gh"}, "sign-in off"},
		{"on with repo rooms following GitHub", map[string]string{"LETAGENTS_LOCAL_OWNER": "on"}, "LETAGENTS_REPO_ACCESS=open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.CheckLocalOwner()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("CheckLocalOwner = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOrigins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"none", nil, nil},
		{"base and public API URLs as origins", map[string]string{"LETAGENTS_BASE_URL": "https://chat.example.com/app/",
			"PUBLIC_API_URL": "https://api.example.com/v1"}, []string{"https://chat.example.com", "https://api.example.com"}},
		{"dev origins first, no repeats", map[string]string{"LETAGENTS_DEV_ORIGINS": "http://localhost:3000",
			"LETAGENTS_BASE_URL": "http://localhost:3000", "PUBLIC_API_URL": "http://localhost:3000"}, []string{"http://localhost:3000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Origins(); !slices.Equal(got, tt.want) {
				t.Errorf("Origins = %q, want %q", got, tt.want)
			}
		})
	}
}
