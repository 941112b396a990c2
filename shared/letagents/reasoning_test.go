package letagents

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func fields(t *testing.T, body string) ReasoningFields {
	t.Helper()
	var f ReasoningFields
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReasoningSnapshot holds the snapshot of a write to 0.12.9's
// parseReasoningSnapshot: only the fields the body has are copied, blank
// and non-string texts are null, status is read in any case, confidence
// as JavaScript's Number() reads it; and the JSON written back has exactly
// those fields, in the original's order.
func TestReasoningSnapshot(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxReasoningTextBytes+1)
	for _, c := range []struct {
		name, body string
		want       string // the snapshot's JSON; "" when refused
		err        string
	}{
		{"summary only", `{"summary": "auditing coverage"}`, `{"summary":"auditing coverage"}`, ""},
		{"trimmed", `{"summary": "  auditing  "}`, `{"summary":"auditing"}`, ""},
		{"original's route test", `{"summary": "auditing coverage", "goal": "cover reasoning streaming", "blocker": " ", "status": "working", "confidence": "0.6", "task_id": " task_5 "}`,
			`{"summary":"auditing coverage","goal":"cover reasoning streaming","blocker":null,"status":"working","confidence":0.6}`, ""},
		{"every field, in order", `{"confidence": 1, "status": "blocked", "milestone": "m", "next_action": "n", "blocker": "b", "hypothesis": "h", "checking": "c", "goal": "g", "summary": "s"}`,
			`{"summary":"s","goal":"g","checking":"c","hypothesis":"h","blocker":"b","next_action":"n","milestone":"m","status":"blocked","confidence":1}`, ""},
		{"explicit nulls kept", `{"summary": "s", "goal": null, "status": null, "confidence": null}`, `{"summary":"s","goal":null,"status":null,"confidence":null}`, ""},
		{"non-string text is null", `{"summary": "s", "goal": 5, "checking": {"a": 1}, "hypothesis": ["x"], "blocker": true}`,
			`{"summary":"s","goal":null,"checking":null,"hypothesis":null,"blocker":null}`, ""},
		{"status in any case", `{"summary": "s", "status": "  Reviewing "}`, `{"summary":"s","status":"reviewing"}`, ""},
		{"confidence bounds", `{"summary": "s", "confidence": 0}`, `{"summary":"s","confidence":0}`, ""},
		{"confidence string with spaces", `{"summary": "s", "confidence": " 0.25 "}`, `{"summary":"s","confidence":0.25}`, ""},
		{"confidence empty string is 0", `{"summary": "s", "confidence": ""}`, `{"summary":"s","confidence":0}`, ""},
		{"confidence true is 1", `{"summary": "s", "confidence": true}`, `{"summary":"s","confidence":1}`, ""},
		{"HTML stays itself", `{"summary": "a < b && c > d"}`, `{"summary":"a < b && c > d"}`, ""},
		{"unknown keys ignored", `{"summary": "s", "actor_label": "x", "whatever": 1}`, `{"summary":"s"}`, ""},

		{"no summary", `{"goal": "g"}`, "", "summary is required"},
		{"blank summary", `{"summary": "   "}`, "", "summary is required"},
		{"summary not a string", `{"summary": 5}`, "", "summary is required"},
		{"null summary", `{"summary": null}`, "", "summary is required"},
		{"long summary", `{"summary": "` + long + `"}`, "", "summary is longer than 131072 bytes"},
		{"long field", `{"summary": "s", "next_action": "` + long + `"}`, "", "next_action is longer than 131072 bytes"},
		{"unknown status", `{"summary": "s", "status": "sleeping"}`, "", "status must be one of: idle, working, reviewing, blocked"},
		{"empty status", `{"summary": "s", "status": ""}`, "", "status must be one of"},
		{"status not a string", `{"summary": "s", "status": 1}`, "", "status must be one of"},
		{"confidence above 1", `{"summary": "s", "confidence": 1.5}`, "", "confidence must be a number between 0 and 1"},
		{"confidence below 0", `{"summary": "s", "confidence": -0.1}`, "", "confidence must be a number between 0 and 1"},
		{"confidence no number", `{"summary": "s", "confidence": "high"}`, "", "confidence must be a number between 0 and 1"},
		{"confidence NaN", `{"summary": "s", "confidence": "NaN"}`, "", "confidence must be a number between 0 and 1"},
		{"confidence array", `{"summary": "s", "confidence": [0.5]}`, "", "confidence must be a number between 0 and 1"},
	} {
		s, err := fields(t, c.body).Snapshot()
		if c.err != "" {
			if !IsKind(err, Invalid) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want Invalid %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		b, err := s.MarshalJSON()
		if err != nil || string(b) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.name, b, err, c.want)
		}
		// What is stored reads back as itself.
		var back ReasoningSnapshot
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%s: read back: %v", c.name, err)
		} else if again, _ := back.MarshalJSON(); string(again) != c.want {
			t.Errorf("%s: read back as %s", c.name, again)
		}
	}
}

func TestReasoningFieldsRefs(t *testing.T) {
	t.Parallel()
	f := fields(t, `{"task_id": " task_5 ", "anchor_message_id": "", "agent_key": 7, "closed": null, "long": "`+strings.Repeat("k", 201)+`"}`)
	for _, c := range []struct {
		key     string
		want    Opt[string]
		wantErr bool
	}{
		{"task_id", Some("task_5"), false},
		{"anchor_message_id", Null[string](), false},
		{"agent_key", Null[string](), false},
		{"closed", Null[string](), false},
		{"absent", Opt[string]{}, false},
		{"long", Opt[string]{}, true},
	} {
		got, err := f.Field(c.key, MaxReasoningRefBytes)
		if (err != nil) != c.wantErr || got.Set != c.want.Set || got.Or("<null>") != c.want.Or("<null>") {
			t.Errorf("Field(%s) = %+v %q, %v; want %+v %q", c.key, got, got.Or("<null>"), err, c.want, c.want.Or("<null>"))
		}
	}
}

func TestReasoningClosedAt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 4, 22, 15, 0, 0, 123e6, time.UTC)
	for _, c := range []struct {
		body    string
		want    Opt[time.Time]
		wantErr bool
	}{
		{`{}`, Opt[time.Time]{}, false},
		{`{"closed_at": "2026-04-22T15:00:00.123Z"}`, Some(at), false},
		{`{"closed_at": "2026-04-22T17:00:00.123+02:00"}`, Some(at), false},
		{`{"closed_at": null}`, Null[time.Time](), false},
		{`{"closed_at": " "}`, Null[time.Time](), false},
		{`{"closed_at": false}`, Null[time.Time](), false},
		{`{"closed_at": "yesterday"}`, Opt[time.Time]{}, true},
	} {
		got, err := fields(t, c.body).ClosedAt()
		if (err != nil) != c.wantErr || got.Set != c.want.Set || !got.Or(time.Time{}).Equal(c.want.Or(time.Time{})) {
			t.Errorf("%s: %+v, %v; want %+v", c.body, got, err, c.want)
		}
	}
}

func TestReasoningActor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		label, err string
	}{
		{"LakeAnchor | EmmyMay's agent | Agent", ""},
		{"", "actor_label is required"},
		{strings.Repeat("a", MaxSenderBytes+1), "actor_label is longer than"},
		{"LetAgents", "reserved for the server's own lines"},
	} {
		_, err := ReasoningActor(c.label)
		if (c.err == "") != (err == nil) || (err != nil && (!IsKind(err, Invalid) || !strings.Contains(err.Error(), c.err))) {
			t.Errorf("ReasoningActor(%.20q) = %v, want %q", c.label, err, c.err)
		}
	}
}

func TestReasoningChangeRemoved(t *testing.T) {
	t.Parallel()
	closed := ReasoningSession{ClosedAt: time.Now()}
	for _, c := range []struct {
		name string
		c    ReasoningChange
		want bool
	}{
		{"open session changed", ReasoningChange{Session: ReasoningSession{}}, false},
		{"open session updated", ReasoningChange{Session: ReasoningSession{}, Update: &ReasoningUpdate{}}, false},
		{"session closed", ReasoningChange{Session: closed}, true},
		{"closed session updated", ReasoningChange{Session: closed, Update: &ReasoningUpdate{}}, false},
	} {
		if got := c.c.Removed(); got != c.want {
			t.Errorf("%s: Removed() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReasoningSessionChange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body, want, err string // want: which fields are set, and to what
	}{
		{`{}`, "", "task_id, anchor_message_id, or closed_at is required"},
		{`{"summary": "s", "actor_label": "a"}`, "", "task_id, anchor_message_id, or closed_at is required"},
		{`{"task_id": " task_5 "}`, "task=task_5", ""},
		{`{"task_id": null, "anchor_message_id": "msg_1"}`, "task=<null> anchor=msg_1", ""},
		{`{"closed_at": null}`, "closed=<null>", ""},
		{`{"closed_at": "2026-04-22T15:00:00Z"}`, "closed=2026-04-22T15:00:00Z", ""},
		{`{"closed_at": "soon"}`, "", "closed_at must be a time"},
		{`{"anchor_message_id": "` + strings.Repeat("m", MaxReasoningRefBytes+1) + `"}`, "", "anchor_message_id is longer than 200 bytes"},
	} {
		ch, err := fields(t, c.body).SessionChange()
		if c.err != "" {
			if !IsKind(err, Invalid) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.body, err, c.err)
			}
			continue
		}
		var got []string
		for _, f := range []struct {
			name string
			o    Opt[string]
		}{{"task", ch.TaskID}, {"anchor", ch.AnchorMessageID}} {
			if f.o.Set {
				got = append(got, f.name+"="+f.o.Or("<null>"))
			}
		}
		if ch.ClosedAt.Set {
			at := "<null>"
			if ch.ClosedAt.Value != nil {
				at = ch.ClosedAt.Value.UTC().Format(time.RFC3339)
			}
			got = append(got, "closed="+at)
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%s: %q, %v; want %q", c.body, strings.Join(got, " "), err, c.want)
		}
	}
}
