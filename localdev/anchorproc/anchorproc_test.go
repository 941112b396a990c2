package anchorproc_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/localdev/anchorproc"
)

// A stand-in for a built original: the two scripts Start runs, each
// recording what it was given, the server answering /api/health.
const (
	migrateJS = `require("fs").writeFileSync("migrated", process.env.DB_URL);`
	serverJS  = `require("fs").writeFileSync("served", JSON.stringify({host: process.env.HOST, base: process.env.LETAGENTS_BASE_URL, leaked: process.env.GITHUB_CLIENT_ID || ""}));
require("http").createServer((req, res) => { res.statusCode = req.url === "/api/health" ? 200 : 404; res.end("{}"); })
  .listen(Number(process.env.PORT), process.env.HOST);
process.on("SIGTERM", () => { console.log("stopped by SIGTERM"); process.exit(0); });`
	brokenJS = `process.exit(3);`
)

func fakeOriginal(t *testing.T, server string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed (.ci/ensure-node installs it): %v", err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "dist", "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"dist/api/migrate.js": migrateJS, "dist/api/server.js": server,
		"package.json": `{"name": "letagents", "version": "0.12.9"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStart(t *testing.T) {
	t.Setenv("GITHUB_CLIENT_ID", "the caller's app")
	dir, work := fakeOriginal(t, serverJS), t.TempDir()
	p, err := anchorproc.Start(context.Background(), dir, "postgres://db/anchor", work)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") {
		t.Errorf("URL %q, want one on 127.0.0.1", p.URL)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "migrated")); string(got) != "postgres://db/anchor" {
		t.Errorf("migrated with DB_URL %q", got)
	}
	served, _ := os.ReadFile(filepath.Join(dir, "served"))
	if want := `{"host":"127.0.0.1","base":"` + p.URL + `","leaked":""}`; string(served) != want {
		t.Errorf("served with %s, want %s", served, want)
	}
	p.Stop()
	if log, _ := os.ReadFile(p.Log); !strings.Contains(string(log), "stopped by SIGTERM") {
		t.Errorf("log %q: the original was not stopped by SIGTERM", log)
	}
	if v, err := anchorproc.Version(dir); v != "0.12.9" || err != nil {
		t.Errorf("Version = %q, %v", v, err)
	}
}

func TestStartFailures(t *testing.T) {
	for _, c := range []struct {
		name, server, want string
		noMigrate          bool
	}{
		{name: "server exits", server: brokenJS, want: "exited before answering /api/health"},
		{name: "migration fails", server: serverJS, noMigrate: true, want: "node dist/api/migrate.js"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fakeOriginal(t, c.server)
			if c.noMigrate {
				if err := os.WriteFile(filepath.Join(dir, "dist/api/migrate.js"), []byte(brokenJS), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			_, err := anchorproc.Start(ctx, dir, "postgres://db/anchor", t.TempDir())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start: %v, want an error saying %q", err, c.want)
			}
		})
	}
	if _, err := anchorproc.Version(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Version of a directory without package.json: %v", err)
	}
}
