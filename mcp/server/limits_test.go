package server

import (
	"fmt"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
)

// argLimits is the maximum length every string argument must have, by
// argument name ("artifact.url" for a field of the artifact object): the
// API's limit for the field it becomes, or, for what the API never sees,
// the client's own bound. toolArgLimits holds the exceptions, by
// "tool.argument".
var (
	argLimits = map[string]int{
		"room_id": maxRoomID, "name": maxRoomID, "room": maxRoomID,
		"code":                     rooms.MaxIDLength,
		"text":                     letagents.MaxTextBytes,
		"sender":                   maxIgnored,
		"created_by":               maxIgnored,
		"conversation_id":          maxIgnored,
		"cwd":                      maxPath,
		"request_id":               letagents.MaxTokenBytes,
		"board_approval_token":     letagents.MaxTokenBytes,
		"runtime":                  letagents.MaxLabelBytes,
		"display_name":             letagents.MaxLabelBytes,
		"status":                   letagents.MaxPresenceText,
		"title":                    letagents.MaxTaskTitleBytes,
		"description":              letagents.MaxTaskDescriptionBytes,
		"assignee":                 letagents.MaxSenderBytes,
		"pr_url":                   letagents.MaxPRURLBytes,
		"lease_id":                 maxLeaseID,
		"target_agent_key":         letagents.MaxSenderBytes,
		"target_actor_key":         letagents.MaxSenderBytes,
		"target_actor_instance_id": letagents.MaxSenderBytes,
		"reason":                   letagents.MaxLeaseReasonBytes,
		"artifact.id":              letagents.MaxArtifactFieldBytes,
		"artifact.ref":             letagents.MaxArtifactFieldBytes,
		"artifact.state":           letagents.MaxArtifactFieldBytes,
		"artifact.title":           letagents.MaxArtifactTitleBytes,
		"artifact.url":             letagents.MaxArtifactURLBytes,
		"summary":                  letagents.MaxReasoningTextBytes,
		"goal":                     letagents.MaxReasoningTextBytes,
		"checking":                 letagents.MaxReasoningTextBytes,
		"hypothesis":               letagents.MaxReasoningTextBytes,
		"blocker":                  letagents.MaxReasoningTextBytes,
		"next_action":              letagents.MaxReasoningTextBytes,
		"milestone":                letagents.MaxReasoningTextBytes,
		"query":                    letagents.MaxSearchQueryBytes,
		"cursor":                   letagents.MaxSearchCursorBytes,
		// get_room_events' filters: the API reads none of them.
		"event_type":  maxIgnored,
		"object_id":   maxIgnored,
		"actor":       maxIgnored,
		"since":       maxIgnored,
		"until":       maxIgnored,
		"after":       maxIgnored,
		"stop_phrase": maxStopPhrase,
		"session_id":  maxLiveSessionID,
		"server_url":  maxServerURL,
	}
	toolArgLimits = map[string]int{
		"set_agent_name.name":                      maxAgentName,
		"claim_task.assignee":                      maxIgnored,
		"search_messages.sender":                   letagents.MaxSenderBytes,
		"register_board_intent.reason":             letagents.MaxIntentReasonBytes,
		"register_task_create_intent.reason":       letagents.MaxIntentReasonBytes,
		"register_task_claim_intent.reason":        letagents.MaxIntentReasonBytes,
		"register_task_close_intent.reason":        letagents.MaxIntentReasonBytes,
		"register_task_lease_action_intent.reason": letagents.MaxIntentReasonBytes,
		"approve_board_intent.reason":              letagents.MaxIntentReasonBytes,
		"deny_board_intent.reason":                 letagents.MaxIntentReasonBytes,
	}
)

// TestArgumentLimits holds every string argument of every tool to the
// limit of the field it becomes, so a tool can neither accept what the
// API refuses nor refuse what it accepts; and wants every string bounded
// (by a length, a pattern or a list of values).
func TestArgumentLimits(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, st := range (&Server{}).tools() {
		tl := st.Tool
		var walk func(prefix string, props map[string]any)
		walk = func(prefix string, props map[string]any) {
			for name, p := range props {
				schema, _ := p.(map[string]any)
				arg := prefix + name
				if sub, ok := schema["properties"].(map[string]any); ok {
					walk(arg+".", sub)
				}
				// A field that may be null too is a string all the same.
				if typ := fmt.Sprint(schema["type"]); typ != "string" && typ != "[string null]" {
					continue
				}
				max, hasMax := schema["maxLength"].(int)
				_, hasPattern := schema["pattern"]
				_, hasEnum := schema["enum"]
				if !hasMax {
					if !hasPattern && !hasEnum {
						t.Errorf("%s: argument %s has no maxLength, pattern or enum", tl.Name, arg)
					}
					continue
				}
				want, ok := toolArgLimits[tl.Name+"."+arg]
				if !ok {
					want, ok = argLimits[arg]
				}
				switch {
				case !ok:
					t.Errorf("%s: argument %s has maxLength %d, and no known limit: add the API's limit for it to argLimits", tl.Name, arg, max)
				case max != want:
					t.Errorf("%s: argument %s has maxLength %d, want %d", tl.Name, arg, max, want)
				}
				checked++
			}
		}
		walk("", tl.InputSchema.Properties)
	}
	if checked < len(argLimits) {
		t.Errorf("checked %d bounded arguments, fewer than the %d names known: did the schemas' shape change?", checked, len(argLimits))
	}
}
