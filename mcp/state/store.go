package state

import (
	"context"
	"fmt"
	"time"
)

// Store is where an MCP server keeps its state: the [File] a local
// server shares with the other agents of its machine, or a [Blob], one
// per hosted MCP session, kept wherever its host keeps them.
type Store interface {
	// Load reads the state; its maps are never nil.
	Load() (State, error)
	// Update applies fn to the current state and saves what it leaves.
	Update(ctx context.Context, fn func(*State) error) error
}

// Blob is a state kept as one JSON document by its host (the hosted
// server keeps each MCP session's in PostgreSQL). Read and Write are the
// host's; ok false from Read is a state never written. Unlike [File],
// concurrent updates are not serialised across hosts: the last write
// wins, which a session's few writes (a join, a registered agent
// session) can afford.
type Blob struct {
	Read  func(ctx context.Context) (data []byte, ok bool, err error)
	Write func(ctx context.Context, data []byte) error
}

// blobTimeout bounds a Load, which has no context of its own.
const blobTimeout = 10 * time.Second

// Load reads the document; a corrupt one reads as what parses of it,
// with a *CorruptError, as a corrupt file does.
func (b Blob) Load() (State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), blobTimeout)
	defer cancel()
	doc, err := b.read(ctx)
	if doc == nil {
		return (&document{}).state(time.Now()), err
	}
	return doc.state(time.Now()), err
}

func (b Blob) read(ctx context.Context) (*document, error) {
	data, ok, err := b.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if !ok {
		return &document{}, nil
	}
	return parse("session state", data)
}

// Update reads, applies fn and writes back what changed; an fn error is
// returned unchanged and nothing is written.
func (b Blob) Update(ctx context.Context, fn func(*State) error) error {
	doc, err := b.read(ctx)
	if doc == nil {
		return err
	}
	s := doc.state(time.Now())
	if err := fn(&s); err != nil {
		return err
	}
	data, err := doc.encode(&s)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := b.Write(ctx, data); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}
