package service_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/testwait"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		check   func(service.Config) bool
		wantErr string
	}{
		{"defaults", nil, func(c service.Config) bool {
			return c.PollMax == 180*time.Second && c.GatewayHold == 25*time.Second && c.Addr == ":3001" && c.DB.MaxConns == 0
		}, ""},
		{"all set", map[string]string{"DB_URL": "postgres://x", "DB_MAX_CONNS": "4", "LETAGENTS_POLL_MAX_MS": "1000",
			"LETAGENTS_GATEWAY_HOLD_MS": "20000", "PORT": "8080", "LOG_LEVEL": "debug"}, func(c service.Config) bool {
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
		{"sign-in defaults", nil, func(c service.Config) bool {
			return c.RepoAccess && c.JoinLimit == 10 && c.InviteRoomLimit == 30 && c.SendLimit == 600 &&
				c.BaseURL == "" && c.KMSKeyID == "" && c.TokenKeyFile == ""
		}, ""},
		{"sign-in set", map[string]string{"GITHUB_CLIENT_ID": "id", "GITHUB_CLIENT_SECRET": "secret", "GITHUB_OAUTH_SCOPES": "read:user",
			"GITHUB_OAUTH_URL": "http://127.0.0.1:9/", "GITHUB_API_URL": "http://127.0.0.1:9", "LETAGENTS_TOKEN_KEY_FILE": "/tmp/k",
			"LETAGENTS_BASE_URL": "https://chat.example.com/", "PUBLIC_API_URL": "https://api.example.com", "LETAGENTS_REPO_ACCESS": "open",
			"LETAGENTS_JOIN_LIMIT": "50", "LETAGENTS_INVITE_ROOM_LIMIT": "5", "LETAGENTS_SEND_LIMIT": "1000000"}, func(c service.Config) bool {
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
		{"body timeout default", nil, func(c service.Config) bool { return c.BodyTimeout == 30*time.Second }, ""},
		{"body timeout set", map[string]string{"LETAGENTS_BODY_TIMEOUT_MS": "1000"}, func(c service.Config) bool { return c.BodyTimeout == time.Second }, ""},
		{"body timeout too small", map[string]string{"LETAGENTS_BODY_TIMEOUT_MS": "999"}, nil, "LETAGENTS_BODY_TIMEOUT_MS"},
		{"body timeout too large", map[string]string{"LETAGENTS_BODY_TIMEOUT_MS": "600001"}, nil, "LETAGENTS_BODY_TIMEOUT_MS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := service.LoadConfig(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadConfig error = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(cfg) {
				t.Fatalf("LoadConfig = %+v, %v", cfg, err)
			}
		})
	}
}

func TestOpenMigratesAndServes(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t) // Open must apply the migrations itself
	ctx := context.Background()
	cfg, err := service.LoadConfig(func(k string) string { return map[string]string{"DB_URL": d.URL}[k] })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.Open(ctx, cfg, api.GroupRooms)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if svc.Hub != nil {
		t.Error("a rooms-only service started a listener hub")
	}
	if _, err := svc.Store.CreateInviteRoom(ctx, 0); err != nil {
		t.Fatalf("store on the migrated schema: %v", err)
	}
	if _, err := service.Open(ctx, service.Config{}); err == nil || !strings.Contains(err.Error(), "DB_URL") {
		t.Errorf("Open without a database = %v, want an error naming DB_URL", err)
	}
}

func TestServeDrainsParkedPollsOnShutdown(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	svc, err := service.FromPool(context.Background(), service.Config{}, d.Pool, api.GroupPoll)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, _, err := svc.Store.EnsureRoom(context.Background(), "shutdown"); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		// A shutdown budget only a broken drain would use up.
		done <- service.Serve(ctx, "127.0.0.1:0", svc.Handler, service.Serving{Drain: svc.Drain, Grace: 30 * time.Second,
			Ready: func(a net.Addr) { addr <- a }})
	}()
	url := service.Listening(testwait.Recv(t, "the server to listen", addr))
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "/rooms/shutdown/messages/poll?timeout=60000")
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	testwait.Until(t, "the poll to park", func() bool { return svc.Hub.Stats().Subscribers > 0 })
	stop()
	if code := testwait.Recv(t, "the parked poll's answer on shutdown", answered); code != http.StatusOK {
		t.Errorf("parked poll answered %d on shutdown, want 200", code)
	}
	if err := testwait.Recv(t, "Serve to return", done); err != nil {
		t.Errorf("Serve = %v", err)
	}
}
