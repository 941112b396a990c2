package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"
)

// File is one state file shared by every process that opens the same path.
// Its methods are safe for concurrent use. The zero File is not usable;
// call [Open].
type File struct {
	path string
	// turn admits one Update of this File at a time, so goroutines queue
	// in order here instead of polling the lock file against each other.
	turn chan struct{}
	// lockWait bounds an Update's wait for its turn and the lock.
	lockWait time.Duration
}

// Open returns the state file at path (see [DefaultPath]). It does no I/O:
// a missing file reads as an empty State, and the file and its directory
// are created by the first Update.
func Open(path string) *File {
	return &File{path: path, turn: make(chan struct{}, 1), lockWait: defaultLockWait}
}

// CorruptError reports a state file that could not be understood: it is
// not a JSON object, or a key this package owns has the wrong shape.
// Callers should log it and go on; the next [File.Update] copies the file
// aside to <path>.corrupt-<unix-nanos> and then replaces it.
type CorruptError struct {
	Path string
	Err  error
}

// Error names the file and what is wrong with it.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("state file %s is corrupt: %v", e.Path, e.Err)
}

// Unwrap returns the decoding error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Load reads the state without locking: writers replace the file by
// rename, so a reader sees either the old or the new file, never a mix.
// A missing file gives an empty State. A corrupt file gives an empty State
// (or, if only some owned keys are bad, the rest of it) and a
// *[CorruptError]. Expired Auth and PendingDeviceAuth are left out. The
// maps of the returned State are never nil.
func (f *File) Load() (State, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return (&document{}).state(time.Now()), nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read state: %w", err)
	}
	doc, err := parse(f.path, data)
	return doc.state(time.Now()), err
}

// Update runs fn on the current state and saves what fn leaves, holding
// an OS lock on <path>.flock throughout so that concurrent updaters, in
// this process or others, each see the previous one's result. The lock
// ends with the process that holds it, so an agent killed mid-update
// blocks no one. fn sees what Load would return (so expired sign-ins are
// removed from the file by the next Update) and should be quick, as
// every other updater waits for it. If fn returns an error, Update
// returns it unchanged and writes nothing; if fn panics, the lock is
// released and the panic goes on.
//
// Waiting for the lock, including behind other goroutines' updates of
// this File, ends when ctx is done (with an error wrapping ctx.Err()) or
// after 30 s in all (with an error naming the lock file and its holder).
// Keys of the file this package does not own are
// written back as they were, and so is each owned key fn left unchanged
// (with any fields a newer client added inside it). If nothing changed,
// the file is not rewritten. A corrupt file is first copied aside, as
// described at [CorruptError]; a file that cannot be read is not replaced.
func (f *File) Update(ctx context.Context, fn func(*State) error) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update state: %w", err)
	}
	deadline := time.Now().Add(f.lockWait)
	if err := f.waitTurn(ctx, deadline); err != nil {
		return err
	}
	defer func() { <-f.turn }()

	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	lock, err := acquire(ctx, f.path+lockSuffix, deadline, f.lockWait)
	if err != nil {
		return err
	}
	// Closing releases the lock even when it reports an error, and by then
	// the state is saved, so the error is not the caller's concern.
	defer lock.Close()

	data, err := os.ReadFile(f.path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read state: %w", err)
	}
	doc := &document{}
	var corrupt error
	if exists {
		doc, corrupt = parse(f.path, data)
	}
	st := doc.state(time.Now())
	if err := fn(&st); err != nil {
		return err
	}
	out, err := doc.encode(&st)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if exists && corrupt == nil && bytes.Equal(out, data) {
		return nil
	}
	if corrupt != nil {
		if err := copyAside(f.path, data); err != nil {
			return err
		}
	}
	return writeFile(f.path, out)
}

// waitTurn takes this File's turn, giving up at deadline or when ctx is done.
func (f *File) waitTurn(ctx context.Context, deadline time.Time) error {
	select {
	case f.turn <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case f.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for state lock: %w", ctx.Err())
	case <-t.C:
		return fmt.Errorf("timed out after %v waiting for another update of %s in this process", f.lockWait, f.path)
	}
}

// field is one top-level key of the file that this package owns.
type field struct {
	key string
	ptr func(*State) any // the address of the key's field in a State
}

// fields lists the owned keys; TestFieldsMatchTags checks it against
// State's json tags.
var fields = []field{
	{"auth", func(s *State) any { return &s.Auth }},
	{"pending_device_auth", func(s *State) any { return &s.PendingDeviceAuth }},
	{"agent_identities", func(s *State) any { return &s.AgentIdentities }},
	{"current_room", func(s *State) any { return &s.CurrentRoom }},
	{"room_sessions", func(s *State) any { return &s.RoomSessions }},
	{"agent_sessions", func(s *State) any { return &s.AgentSessions }},
	{"codex_live_sessions", func(s *State) any { return &s.CodexLiveSessions }},
	{"current_codex_live_session_ids", func(s *State) any { return &s.CurrentCodexLiveSessions }},
	{"resource_subscriptions", func(s *State) any { return &s.ResourceSubscriptions }},
}

// document is the file as read: the raw object, so that keys this package
// does not own survive a rewrite, and the decoded state before fn changed
// it, so that owned keys left unchanged can be written back byte for byte.
type document struct {
	raw  map[string]json.RawMessage
	orig State
	bad  map[string]bool // owned keys that failed to decode
}

// parse decodes a state file's contents. On a *CorruptError it still
// returns a usable document: empty, or without the bad keys.
func parse(path string, data []byte) (*document, error) {
	doc := &document{}
	if err := json.Unmarshal(data, &doc.raw); err != nil {
		doc.raw = nil
		return doc, &CorruptError{Path: path, Err: err}
	}
	if doc.raw == nil {
		return doc, &CorruptError{Path: path, Err: errors.New("null, not a JSON object")}
	}
	doc.bad = make(map[string]bool)
	var errs []error
	for _, fl := range fields {
		msg, ok := doc.raw[fl.key]
		if !ok {
			continue
		}
		p := fl.ptr(&doc.orig)
		if err := json.Unmarshal(msg, p); err != nil {
			// Unmarshal may have filled part of it; treat the key as absent.
			reflect.ValueOf(p).Elem().SetZero()
			doc.bad[fl.key] = true
			errs = append(errs, fmt.Errorf("key %q: %w", fl.key, err))
		}
	}
	if len(errs) > 0 {
		return doc, &CorruptError{Path: path, Err: errors.Join(errs...)}
	}
	return doc, nil
}

// state returns a copy of the decoded state that the caller may change,
// with non-nil maps and without anything that has expired by now.
func (d *document) state(now time.Time) State {
	s := d.clone()
	if s.Auth != nil && expired(s.Auth.ExpiresAt, now) {
		s.Auth = nil
	}
	if s.PendingDeviceAuth != nil && expired(s.PendingDeviceAuth.ExpiresAt, now) {
		s.PendingDeviceAuth = nil
	}
	return s
}

// clone returns a deep copy of the decoded state with non-nil maps.
func (d *document) clone() State {
	s := d.orig
	if s.Auth != nil {
		a := *s.Auth
		if a.Account != nil {
			acct := *a.Account
			a.Account = &acct
		}
		s.Auth = &a
	}
	if s.PendingDeviceAuth != nil {
		p := *s.PendingDeviceAuth
		s.PendingDeviceAuth = &p
	}
	s.AgentIdentities = cloneMap(s.AgentIdentities)
	s.RoomSessions = cloneMap(s.RoomSessions)
	s.AgentSessions = cloneMap(s.AgentSessions)
	s.CodexLiveSessions = cloneMap(s.CodexLiveSessions)
	s.CurrentCodexLiveSessions = cloneMap(s.CurrentCodexLiveSessions)
	return s
}

func cloneMap[V any](m map[string]V) map[string]V {
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// expired reports whether an RFC 3339 expiry time has passed. An empty or
// unreadable one does not expire here: the server is the judge of a token
// it cannot parse, and dropping it would sign the user out for nothing.
func expired(ts string, now time.Time) bool {
	if ts == "" {
		return false
	}
	t, err := time.Parse(time.RFC3339, ts)
	return err == nil && !now.Before(t)
}

// encode renders s as the file's new contents.
func (d *document) encode(s *State) ([]byte, error) {
	out := make(map[string]json.RawMessage, len(d.raw)+len(fields))
	for k, v := range d.raw {
		out[k] = v
	}
	// Compare with what was read, expired entries included, so that
	// dropping them counts as a change.
	orig := d.clone()
	for _, fl := range fields {
		if !d.bad[fl.key] && reflect.DeepEqual(fl.ptr(&orig), fl.ptr(s)) {
			continue
		}
		v := reflect.ValueOf(fl.ptr(s)).Elem()
		if v.IsZero() || (v.Kind() == reflect.Map && v.Len() == 0) {
			delete(out, fl.key)
			continue
		}
		b, err := marshal(v.Interface(), "")
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", fl.key, err)
		}
		out[fl.key] = b
	}
	return marshal(out, "  ")
}

// marshal encodes v without escaping <, > and & (names and URLs stay
// readable), indented by indent if not empty, ending in a newline only
// when indented.
func marshal(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if indent == "" {
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	return buf.Bytes(), nil
}

// copyAside keeps a corrupt file's contents before it is replaced.
func copyAside(path string, data []byte) error {
	name := path + ".corrupt-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := writeNew(name, data); err != nil {
		return fmt.Errorf("copy corrupt state file aside: %w", err)
	}
	return nil
}

// writeFile replaces path with data by writing a temporary file beside it
// and renaming it over path, so readers never see a partial file.
func writeFile(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.%s.tmp", path, os.Getpid(), randomSuffix())
	if err := writeNew(tmp, data); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write state: %w", err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// writeNew creates name (which must not exist) with mode 0600 and data,
// flushed to disk.
func writeNew(name string, data []byte) error {
	fh, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// syncDir flushes a directory so a rename in it survives a crash. It is
// best effort: some systems (Windows) cannot sync a directory, and the
// rename has already made the new file visible.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

func randomSuffix() string {
	return strconv.FormatUint(rand.Uint64(), 36)
}
