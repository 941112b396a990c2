package letagents

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// Reasoning sessions are an agent's visible thought process in a room: a
// trace it replaces in place (goal, what it checks, its hypothesis,
// blockers, the next step) instead of posting each thought to the chat.
// A session holds the merge of every snapshot written to it; its updates
// keep each snapshot as it was written.

// Prefixes of reasoning ids: "rs_" or "ru_" and 32 hex digits, random as
// in the original service.
const (
	ReasoningSessionPrefix = "rs_"
	ReasoningUpdatePrefix  = "ru_"
)

// Limits of reasoning sessions.
const (
	// MaxReasoningTextBytes bounds the summary and each text field of a
	// snapshot. The original bounds them only by its 1 MB body; here a
	// session carries up to nine of them (its summary and its merged
	// snapshot), and one session must fit a page (MaxPageBytes) and an
	// answer through Lambda, so each is held far below that.
	MaxReasoningTextBytes = 128 << 10
	// MaxReasoningRefBytes bounds task_id, anchor_message_id and
	// agent_key, which are ids (the actor label is a sender label,
	// MaxSenderBytes).
	MaxReasoningRefBytes = 200
	// DefaultReasoningSessionPage and MaxReasoningSessionPage bound ?limit
	// of a session listing; DefaultReasoningUpdatePage and
	// MaxReasoningUpdatePage that of a session's updates, as in 0.12.9.
	DefaultReasoningSessionPage = 50
	MaxReasoningSessionPage     = 200
	DefaultReasoningUpdatePage  = 200
	MaxReasoningUpdatePage      = 500
)

// Keys of a reasoning write's body, as clients send them.
const (
	ReasoningSummary    = "summary"
	ReasoningGoal       = "goal"
	ReasoningChecking   = "checking"
	ReasoningHypothesis = "hypothesis"
	ReasoningBlocker    = "blocker"
	ReasoningNextAction = "next_action"
	ReasoningMilestone  = "milestone"
	ReasoningStatus     = "status"
	ReasoningConfidence = "confidence"
)

// Opt is a field a write may leave out (the zero Opt), give as null (Set
// with a nil Value), or give a value.
type Opt[T any] struct {
	Set   bool
	Value *T
}

// Some is an Opt set to v.
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, Value: &v} }

// Null is an Opt set to null.
func Null[T any]() Opt[T] { return Opt[T]{Set: true} }

// Or is the value, or def when there is none.
func (o Opt[T]) Or(def T) T {
	if o.Value == nil {
		return def
	}
	return *o.Value
}

// ReasoningSnapshot is one write of a reasoning trace. Only the fields the
// write gave are set: merged into a session, a field left out keeps the
// session's value, and one given as null clears it.
type ReasoningSnapshot struct {
	Summary                                                    string
	Goal, Checking, Hypothesis, Blocker, NextAction, Milestone Opt[string]
	Status                                                     Opt[string] // one of PresenceStatuses
	Confidence                                                 Opt[float64]
}

// texts are the snapshot's optional text fields, in the order answers
// give them (the original's).
func (s *ReasoningSnapshot) texts() []struct {
	key string
	f   *Opt[string]
} {
	return []struct {
		key string
		f   *Opt[string]
	}{{ReasoningGoal, &s.Goal}, {ReasoningChecking, &s.Checking}, {ReasoningHypothesis, &s.Hypothesis},
		{ReasoningBlocker, &s.Blocker}, {ReasoningNextAction, &s.NextAction}, {ReasoningMilestone, &s.Milestone}}
}

// MarshalJSON writes the fields the snapshot has, nulls included, and no
// others; <, > and & stay themselves, as in every answer.
func (s ReasoningSnapshot) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	put := func(key string, v any) error {
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(key) + ":")
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // the newline Encode ends with
		return nil
	}
	if err := put(ReasoningSummary, s.Summary); err != nil {
		return nil, err
	}
	for _, t := range s.texts() {
		if t.f.Set {
			if err := put(t.key, t.f.Value); err != nil {
				return nil, err
			}
		}
	}
	if s.Status.Set {
		if err := put(ReasoningStatus, s.Status.Value); err != nil {
			return nil, err
		}
	}
	if s.Confidence.Set {
		if err := put(ReasoningConfidence, s.Confidence.Value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a snapshot back as it was stored, by the rules of
// ReasoningFields.Snapshot.
func (s *ReasoningSnapshot) UnmarshalJSON(b []byte) error {
	var f ReasoningFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	snap, err := f.Snapshot()
	if err != nil {
		return err
	}
	*s = snap
	return nil
}

// ReasoningFields is the body of a reasoning write, its JSON values by
// key; a key the body does not have is absent. It is read as the original
// reads it, leniently: see Text, Snapshot.
type ReasoningFields map[string]json.RawMessage

// Has reports whether the body has the key, even as null.
func (f ReasoningFields) Has(key string) bool {
	_, ok := f[key]
	return ok
}

// Text is a field as the original reads an optional string: the string
// trimmed, and "" for a blank one, null, any other JSON type or an absent
// field.
func (f ReasoningFields) Text(key string) string {
	var s string
	if json.Unmarshal(f[key], &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// Field is Text as an Opt: unset when the body lacks the key, null when
// Text is "". A longer text than maxBytes is Invalid.
func (f ReasoningFields) Field(key string, maxBytes int) (Opt[string], error) {
	if !f.Has(key) {
		return Opt[string]{}, nil
	}
	s := f.Text(key)
	switch {
	case s == "":
		return Null[string](), nil
	case len(s) > maxBytes:
		return Opt[string]{}, Errorf(Invalid, "%s is longer than %d bytes", key, maxBytes)
	}
	return Some(s), nil
}

// Snapshot reads the snapshot a write gives: summary, required; the other
// text fields, null when blank or not strings; status, one of
// PresenceStatuses in any case (null stays null); confidence, a number
// from 0 to 1 or a string or boolean that reads as one (as JavaScript's
// Number() reads it), or null.
func (f ReasoningFields) Snapshot() (ReasoningSnapshot, error) {
	var s ReasoningSnapshot
	if s.Summary = f.Text(ReasoningSummary); s.Summary == "" {
		return s, Errorf(Invalid, "summary is required")
	}
	if len(s.Summary) > MaxReasoningTextBytes {
		return s, Errorf(Invalid, "summary is longer than %d bytes", MaxReasoningTextBytes)
	}
	for _, t := range s.texts() {
		var err error
		if *t.f, err = f.Field(t.key, MaxReasoningTextBytes); err != nil {
			return s, err
		}
	}
	var err error
	if s.Status, err = reasoningStatus(f[ReasoningStatus]); err != nil {
		return s, err
	}
	s.Confidence, err = reasoningConfidence(f[ReasoningConfidence])
	return s, err
}

// reasoningStatus reads a snapshot's status: absent (nil), null, or a
// presence status, trimmed and in any case.
func reasoningStatus(raw json.RawMessage) (Opt[string], error) {
	if raw == nil {
		return Opt[string]{}, nil
	}
	if isNull(raw) {
		return Null[string](), nil
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	s = strings.ToLower(strings.TrimSpace(s))
	for _, st := range PresenceStatuses {
		if s == st {
			return Some(s), nil
		}
	}
	return Opt[string]{}, Errorf(Invalid, "status must be one of: %s", strings.Join(PresenceStatuses, ", "))
}

// reasoningConfidence reads a snapshot's confidence: absent (nil), null,
// or a number from 0 to 1.
func reasoningConfidence(raw json.RawMessage) (Opt[float64], error) {
	if raw == nil {
		return Opt[float64]{}, nil
	}
	if isNull(raw) {
		return Null[float64](), nil
	}
	bad := Errorf(Invalid, "confidence must be a number between 0 and 1")
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return Opt[float64]{}, bad
	}
	var n float64
	switch v := v.(type) {
	case float64:
		n = v
	case bool:
		if v {
			n = 1
		}
	case string:
		// JavaScript's Number(): white space around, and none at all is 0.
		if t := strings.TrimSpace(v); t != "" {
			var err error
			if n, err = strconv.ParseFloat(t, 64); err != nil {
				return Opt[float64]{}, bad
			}
		}
	default:
		return Opt[float64]{}, bad
	}
	if math.IsNaN(n) || n < 0 || n > 1 {
		return Opt[float64]{}, bad
	}
	return Some(n), nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// ReasoningActor checks the actor label of a reasoning write that no
// worker session signs: required, a sender label's length, and not the
// server's name.
func ReasoningActor(label string) (string, error) {
	switch {
	case label == "":
		return "", Errorf(Invalid, "actor_label is required")
	case len(label) > MaxSenderBytes:
		return "", Errorf(Invalid, "actor_label is longer than %d bytes", MaxSenderBytes)
	}
	return label, NotReserved("actor_label", label)
}

// ClosedAt reads closed_at of a session change: unset when the
// body lacks it, null (the session reopens) when it is blank or not a
// string, else an RFC 3339 time.
func (f ReasoningFields) ClosedAt() (Opt[time.Time], error) {
	if !f.Has("closed_at") {
		return Opt[time.Time]{}, nil
	}
	s := f.Text("closed_at")
	if s == "" {
		return Null[time.Time](), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Opt[time.Time]{}, Errorf(Invalid, "closed_at must be a time such as 2026-04-22T15:00:00.000Z")
	}
	return Some(t), nil
}

// ReasoningSessionChange is a change of a session's task, anchor or
// closing time: unset fields are kept, null ones cleared (a null
// ClosedAt reopens the session).
type ReasoningSessionChange struct {
	TaskID          Opt[string]
	AnchorMessageID Opt[string]
	ClosedAt        Opt[time.Time]
}

// SessionChange reads the change a PATCH of a session asks for: task_id,
// anchor_message_id and closed_at as ClosedAt reads it; at least one.
func (f ReasoningFields) SessionChange() (ReasoningSessionChange, error) {
	var c ReasoningSessionChange
	if !f.Has("task_id") && !f.Has("anchor_message_id") && !f.Has("closed_at") {
		return c, Errorf(Invalid, "task_id, anchor_message_id, or closed_at is required")
	}
	var err error
	if c.TaskID, err = f.Field("task_id", MaxReasoningRefBytes); err != nil {
		return c, err
	}
	if c.AnchorMessageID, err = f.Field("anchor_message_id", MaxReasoningRefBytes); err != nil {
		return c, err
	}
	c.ClosedAt, err = f.ClosedAt()
	return c, err
}

// ReasoningSession is one agent's reasoning trace in a room. Empty
// strings are nulls on the wire; a zero ClosedAt is an open session.
type ReasoningSession struct {
	ID              string // "rs_" and 32 hex digits
	RoomID          string
	TaskID          string
	AnchorMessageID string
	ActorLabel      string
	AgentKey        string
	Status          string // the latest status a snapshot gave, "" for none
	Summary         string // the latest snapshot's summary
	LatestPayload   ReasoningSnapshot
	// ChangeSeq is the number, in the room's event log, of the session's
	// latest change.
	ChangeSeq int64
	CreatedAt time.Time
	UpdatedAt time.Time
	ClosedAt  time.Time
	// OwnerAccountID is the account that opened the session, 0 for
	// nobody signed in (MayChange); never on the wire.
	OwnerAccountID int64
}

// Open reports whether the session has not been closed.
func (s ReasoningSession) Open() bool { return s.ClosedAt.IsZero() }

// ReasoningUpdate is one snapshot written to a session.
type ReasoningUpdate struct {
	ID         string // "ru_" and 32 hex digits
	RoomID     string
	SessionID  string
	ActorLabel string
	Status     string // the session's status after the update, "" for none
	Summary    string
	Milestone  string
	Payload    ReasoningSnapshot // the snapshot as written
	ChangeSeq  int64
	CreatedAt  time.Time
}

// ReasoningChange is a session's latest change after a cursor: the
// session as it is now and, when the change appended a snapshot, that
// update.
type ReasoningChange struct {
	Session ReasoningSession
	Update  *ReasoningUpdate
}

// Removed reports whether the change took the session off the open list:
// it closed it, rather than appending to it (which, to a closed session,
// is still an update).
func (c ReasoningChange) Removed() bool { return c.Update == nil && !c.Session.Open() }
