package seal

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestNewKeyFileCreates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "seal.key")

	first, err := NewKeyFile(path)
	if err != nil {
		t.Fatalf("NewKeyFile on a new path: %v", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat key file: %v", err)
	}
	if got, want := info.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("key file mode: got %#o, want %#o", got, want)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatalf("stat %s: %v", d, err)
		}
		if got, want := info.Mode().Perm(), os.FileMode(0o700); got != want {
			t.Errorf("created directory %s mode: got %#o, want %#o", d, got, want)
		}
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read key file: %v", err)
	}
	if got, want := len(content), 65; got != want || content[64] != '\n' {
		t.Errorf("key file: got %d bytes, want %d (64 hex characters and a newline)", got, want)
	}
	if _, err := hex.DecodeString(strings.TrimSuffix(string(content), "\n")); err != nil {
		t.Errorf("key file content is not hex: %v", err)
	}
	assertNoTempFiles(t, dir)

	second, err := NewKeyFile(path)
	if err != nil {
		t.Fatalf("NewKeyFile on an existing path: %v", err)
	}
	again, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read key file: %v", err)
	}
	if string(again) != string(content) {
		t.Errorf("second NewKeyFile changed the key file")
	}
	sealed := mustSeal(t, first, []byte("gho_secret"), []byte("aad"))
	got, err := second.Open(ctx, sealed, []byte("aad"))
	if err != nil {
		t.Fatalf("second Sealer cannot open the first one's value: %v", err)
	}
	if string(got) != "gho_secret" {
		t.Errorf("Open: got %q, want %q", got, "gho_secret")
	}
}

func TestNewKeyFileConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "seal.key")

	const n = 16
	sealers := make([]Sealer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			sealers[i], errs[i] = NewKeyFile(path)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("NewKeyFile #%d: %v", i, err)
		}
	}

	// One key: every Sealer opens what every other sealed.
	for i, s := range sealers {
		sealed := mustSeal(t, s, []byte("gho_secret"), nil)
		for j, o := range sealers {
			if _, err := o.Open(ctx, sealed, nil); err != nil {
				t.Errorf("Sealer #%d cannot open a value from Sealer #%d: %v", j, i, err)
			}
		}
	}
	assertNoTempFiles(t, dir)
}

func TestNewKeyFileReadsExisting(t *testing.T) {
	t.Parallel()
	key := randomKey(t)
	want, err := NewKey(key)
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	tests := []struct {
		name    string
		content string
	}{
		{"with newline", hex.EncodeToString(key) + "\n"},
		{"without newline", hex.EncodeToString(key)},
		{"upper case", strings.ToUpper(hex.EncodeToString(key)) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "seal.key")
			writeFile(t, path, tt.content, 0o600)
			s, err := NewKeyFile(path)
			if err != nil {
				t.Fatalf("NewKeyFile: %v", err)
			}
			sealed := mustSeal(t, want, []byte("gho_secret"), nil)
			if _, err := s.Open(context.Background(), sealed, nil); err != nil {
				t.Errorf("Sealer from the key file cannot open a value sealed with the key: %v", err)
			}
		})
	}
}

func TestNewKeyFileRejects(t *testing.T) {
	t.Parallel()
	valid := hex.EncodeToString(randomKey(t))
	tests := []struct {
		name    string
		content string
		perm    os.FileMode
	}{
		{"empty", "", 0o600},
		{"short", valid[:62] + "\n", 0o600},
		{"long", valid + "00\n", 0o600},
		{"non-hex", "zz" + valid[2:] + "\n", 0o600},
		{"two newlines", valid + "\n\n", 0o600},
		{"crlf", valid + "\r\n", 0o600},
		{"leading space", " " + valid, 0o600},
		{"group readable", valid + "\n", 0o640},
		{"world readable", valid + "\n", 0o604},
		{"group writable", valid + "\n", 0o620},
		{"world everything", valid + "\n", 0o666},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "seal.key")
			writeFile(t, path, tt.content, tt.perm)
			s, err := NewKeyFile(path)
			if err == nil {
				t.Fatalf("NewKeyFile: got a Sealer %v, want an error", s)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the path %s", msg, path)
			}
			if strings.Contains(strings.ToLower(msg), valid[2:18]) {
				t.Errorf("error %q shows part of the key", msg)
			}
			// The bad file is left alone, not replaced by a new key.
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read key file: %v", err)
			}
			if string(got) != tt.content {
				t.Errorf("key file content changed")
			}
		})
	}
}

func TestNewKeyFileDirectory(t *testing.T) {
	t.Parallel()
	path := t.TempDir()
	if err := os.Chmod(path, 0o700); err != nil {
		t.Fatalf("chmod: %v", err)
	}
	if _, err := NewKeyFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("NewKeyFile(a directory): got %v, want an error naming %s", err, path)
	}
}

func writeFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	// WriteFile's mode is subject to the umask; set it exactly.
	if err := os.Chmod(path, perm); err != nil {
		t.Fatalf("chmod %s: %v", path, err)
	}
}

// assertNoTempFiles checks that dir holds only the key file.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir: %v", err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only the key file", names)
	}
}
