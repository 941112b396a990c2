package gitctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/letagents/letagents-go/shared/rooms"
)

// ConfigName is the file that pins a directory tree to a room.
const ConfigName = ".letagents.json"

// maxConfigLevels bounds the upward search: dir itself and at most 49
// ancestors are examined, so a deep or looping tree cannot stall start-up.
const maxConfigLevels = 50

// maxConfigSize bounds how much of a config file is read; the file holds
// one short field, so anything larger is not a config.
const maxConfigSize = 64 << 10

// ErrConfigExists is wrapped by WriteConfig's error when a config file is
// already in force for the directory, in it or in an ancestor.
var ErrConfigExists = errors.New("letagents config already exists")

// FindConfig walks up from dir (made absolute; "" is the current directory)
// looking for .letagents.json, examining dir and at most 49 ancestors and
// stopping at the filesystem root. The first file found wins: path is its
// location and room its normalised "room". If that file is not usable (not
// readable, not a JSON object, "room" missing, not a string, empty, or not a
// valid room id) room is "" and problem says why; the search does not go on
// upward, because the nearest file is the one the user meant to apply.
// All three results are "" when no file is found.
func FindConfig(dir string) (path, room, problem string) {
	path, data, err := findConfigFile(dir)
	if path == "" {
		return "", "", ""
	}
	if err != nil {
		return path, "", err.Error()
	}
	room, err = parseConfig(data)
	if err != nil {
		return path, "", err.Error()
	}
	return path, room, ""
}

// findConfigFile returns the nearest config file's path and contents, or
// its path and why it could not be read; path is "" when there is none.
func findConfigFile(dir string) (path string, data []byte, err error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for range maxConfigLevels {
		p := filepath.Join(dir, ConfigName)
		data, err := readConfig(p)
		if !errors.Is(err, fs.ErrNotExist) {
			return p, data, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", nil, nil
}

func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("open %s: %w", ConfigName, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		// A directory named .letagents.json fails here (EISDIR); it still
		// counts as found, so it is reported rather than skipped.
		return nil, fmt.Errorf("read %s: %w", ConfigName, err)
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", ConfigName, maxConfigSize)
	}
	return data, nil
}

// parseConfig returns the normalised room of a config file's contents.
func parseConfig(data []byte) (string, error) {
	// Editors on Windows may prepend a byte-order mark, which JSON forbids.
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return "", fmt.Errorf("%s is not valid JSON: %w", ConfigName, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf(`%s is not a JSON object like {"room": "..."}`, ConfigName)
	}
	raw, ok := obj["room"]
	if !ok {
		return "", fmt.Errorf(`%s has no "room"`, ConfigName)
	}
	room, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf(`%s: "room" is not a string`, ConfigName)
	}
	if strings.TrimSpace(room) == "" {
		return "", fmt.Errorf(`%s: "room" is empty`, ConfigName)
	}
	id, err := rooms.Normalize(room)
	if err != nil {
		return "", fmt.Errorf(`%s: "room": %w`, ConfigName, err)
	}
	return id, nil
}

// WriteConfig creates .letagents.json in dir holding {"room":<id>} and a
// newline, where id is room normalised with rooms.Normalize (so the file
// reads back unchanged); an invalid room is an error wrapping
// rooms.ErrInvalid. It refuses, with an error wrapping ErrConfigExists, when
// FindConfig would find a file from dir (usable or not), since a new file
// would silently override or be shadowed by it. The file is created with
// O_EXCL and mode 0644, so it never overwrites one created concurrently.
func WriteConfig(dir, room string) (path string, err error) {
	id, err := rooms.Normalize(room)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", ConfigName, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", ConfigName, err)
	}
	if existing, _, _ := findConfigFile(abs); existing != "" {
		return "", fmt.Errorf("write %s in %s: %w: %s", ConfigName, abs, ErrConfigExists, existing)
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep '&', '<', '>' readable in the file
	if err := enc.Encode(struct {
		Room string `json:"room"`
	}{id}); err != nil {
		return "", fmt.Errorf("encode %s: %w", ConfigName, err)
	}

	path = filepath.Join(abs, ConfigName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("write %s: %w: %w", ConfigName, ErrConfigExists, err)
		}
		return "", fmt.Errorf("write %s: %w", ConfigName, err)
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// A partial file would block every retry (O_EXCL) and not parse.
		_ = os.Remove(path)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
