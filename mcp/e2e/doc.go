// Package e2e holds the end-to-end tests of the MCP server: the letagents
// binary driven over stdio by a real MCP client, exactly as an agent runs
// it, against the local runner (localdev) on a private PostgreSQL schema
// and a fake GitHub. It has no code of its own outside its tests.
package e2e
