package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/wire"
)

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
