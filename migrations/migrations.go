// Package migrations holds the database schema as numbered, forward-only SQL
// files (NNNN_name.sql), embedded so every binary carries the schema it needs.
package migrations

import "embed"

// FS holds every migration file; db.Migrate applies them in order.
//
//go:embed *.sql
var FS embed.FS
