package server

import (
	"context"
	"fmt"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// artifactTools are the tools that list and publish a room's Git
// workflow artifacts.
func (s *Server) artifactTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("get_room_artifacts", readOnly,
			"List the room's Git workflow artifacts (issues, branches, pull/merge requests, reviews, checks, merges), optionally those of one task.",
			roomIDArg,
			mcp.WithString("task_id", mcp.Pattern(taskID), mcp.Description("Only artifacts linked to this task (task_N).")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(letagents.MaxArtifactPage), mcp.Description("At most this many (default 100)."))),
			s.getRoomArtifacts),
		bind(tool("publish_room_artifact", writes,
			"Tell the room about a Git workflow artifact you made or found: a branch you pushed, a pull request you opened, a review, a check, a merge. "+
				"Publishing the same one again (same url, id, number or ref) updates it.",
			mcp.WithObject("artifact", mcp.Required(), mcp.Description("The artifact: kind plus at least one of url, id, number, ref."),
				schemaOf(artifactObject)),
			mcp.WithString("task_id", mcp.Pattern(taskID), mcp.Description("Link it to this task.")),
			mcp.WithArray("linked_task_ids", mcp.MaxItems(letagents.MaxLinkedTasks), mcp.WithStringItems(mcp.Pattern(taskID)),
				mcp.Description(fmt.Sprintf("Link it to these tasks (at most %d).", letagents.MaxLinkedTasks))),
			roomIDArg, sessionArg),
			s.publishRoomArtifact),
	}
}

// schemaOf gives a property all of schema.
func schemaOf(schema map[string]any) mcp.PropertyOption {
	return func(p map[string]any) { maps.Copy(p, schema) }
}

// artifactObject is one artifact as the tools take it: its kind and one
// stable identity at least, so a bad artifact is refused before any
// request; nothing else, as the original was strict here too.
var artifactObject = map[string]any{
	"type": "object", "properties": artifactSchema, "additionalProperties": false,
	"required": []string{"kind"},
	"anyOf": []any{
		hasField("url", "string"), hasField("id", "string"), hasField("number", "integer"), hasField("ref", "string"),
	},
}

// hasField is the rule that an object has field, not null.
func hasField(field, typ string) map[string]any {
	return map[string]any{"required": []string{field}, "properties": map[string]any{field: map[string]any{"type": typ}}}
}

// artifactSchema is the artifact's fields. The optional ones take null
// for absent, as the original's did.
var artifactSchema = map[string]any{
	"provider": map[string]any{"type": "string", "enum": letagents.ArtifactProviders},
	"kind":     map[string]any{"type": "string", "enum": letagents.ArtifactKinds},
	"id":       map[string]any{"type": orNull("string"), "maxLength": letagents.MaxArtifactFieldBytes},
	"number":   map[string]any{"type": orNull("integer"), "minimum": 1},
	"title":    map[string]any{"type": orNull("string"), "maxLength": letagents.MaxArtifactTitleBytes},
	"url":      map[string]any{"type": orNull("string"), "maxLength": letagents.MaxArtifactURLBytes, "pattern": "^https?://"},
	"ref":      map[string]any{"type": orNull("string"), "maxLength": letagents.MaxArtifactFieldBytes},
	"state":    map[string]any{"type": orNull("string"), "maxLength": letagents.MaxArtifactFieldBytes},
}

func orNull(typ string) []string { return []string{typ, "null"} }

type artifactsArgs struct {
	RoomID string `json:"room_id"`
	TaskID string `json:"task_id"`
	Limit  int    `json:"limit"`
}

func (s *Server) getRoomArtifacts(ctx context.Context, a artifactsArgs) *mcp.CallToolResult {
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	list, err := s.api.Artifacts(ctx, room, a.TaskID, a.Limit)
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(map[string]any{"success": true, "room_id": list.RoomID, "artifacts": list.Artifacts})
}

type publishArgs struct {
	RoomID         string              `json:"room_id"`
	AgentSessionID string              `json:"agent_session_id"`
	Artifact       wire.ArtifactFields `json:"artifact"`
	TaskID         string              `json:"task_id"`
	LinkedTaskIDs  []string            `json:"linked_task_ids"`
}

func (s *Server) publishRoomArtifact(ctx context.Context, a publishArgs) *mcp.CallToolResult {
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	sess, bad := s.sessionFor(a.AgentSessionID, room)
	if bad != nil {
		return bad
	}
	art := a.Artifact
	p, err := s.apiAs(sess).PublishArtifact(ctx, room, wire.PublishArtifact{Artifact: &art, TaskID: a.TaskID, LinkedTaskIDs: a.LinkedTaskIDs})
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(map[string]any{"success": true, "room_id": p.RoomID, "artifact": p.Artifact})
}
