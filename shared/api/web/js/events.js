// The live events of a room's event stream, from shared/wire/events.go
// (wire.Events), their one home. Generated: do not edit; after changing
// them run go test ./shared/api -run TestEventsModule -update-events.

export const MESSAGE = "message";
export const TASK_UPDATE = "task_update";
export const REASONING_UPDATE = "reasoning_update";
export const REASONING_REMOVE = "reasoning_remove";
export const MESSAGE_UPDATE = "message_update";
export const ROOM_UPDATE = "room_update";
export const PRESENCE_UPDATE = "presence_update";
export const PRESENCE_REMOVE = "presence_remove";
export const GITHUB_EVENT = "github_event";
export const ACCESS_REVOKED = "access_revoked";
export const HEARTBEAT = "heartbeat";

// EVENTS lists them all.
export const EVENTS = Object.freeze([MESSAGE, TASK_UPDATE, REASONING_UPDATE, REASONING_REMOVE, MESSAGE_UPDATE, ROOM_UPDATE, PRESENCE_UPDATE, PRESENCE_REMOVE, GITHUB_EVENT, ACCESS_REVOKED, HEARTBEAT]);
