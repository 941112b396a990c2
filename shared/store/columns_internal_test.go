package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// describedRow is a row that has only the columns of a prepared
// statement: enough for pgx to map them to a struct's fields by name.
type describedRow struct{ fields []pgconn.FieldDescription }

func (r describedRow) FieldDescriptions() []pgconn.FieldDescription { return r.fields }
func (r describedRow) Scan(...any) error                            { return nil }
func (r describedRow) Values() ([]any, error)                       { return nil, nil }
func (r describedRow) RawValues() [][]byte                          { return nil }

// byName maps a row's columns to a T as every read does.
func byName[T any](row pgx.CollectableRow) error {
	_, err := pgx.RowToStructByName[T](row)
	return err
}

// byPosition holds a row that a hot read scans by position (its targets)
// to byName's rule and one more: the i-th target is the field named by
// the i-th column.
func byPosition[T any, P interface {
	*T
	targets() []any
}](row pgx.CollectableRow) error {
	if err := byName[T](row); err != nil {
		return err
	}
	var r T
	tags := map[uintptr]string{}
	tagFields(reflect.ValueOf(&r).Elem(), tags)
	cols, targets := row.FieldDescriptions(), P(&r).targets()
	if len(targets) != len(cols) {
		return fmt.Errorf("%d targets for %d columns", len(targets), len(cols))
	}
	for i, t := range targets {
		if tag := tags[reflect.ValueOf(t).Pointer()]; tag != cols[i].Name {
			return fmt.Errorf("column %d is %s, its target the field tagged %q", i, cols[i].Name, tag)
		}
	}
	return nil
}

// tagFields maps the address of each field of v tagged db (in embedded
// structs too) to its tag.
func tagFields(v reflect.Value, tags map[uintptr]string) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if tag, ok := f.Tag.Lookup("db"); ok {
			tags[v.Field(i).Addr().Pointer()] = tag
		} else if f.Anonymous {
			tagFields(v.Field(i), tags)
		}
	}
}

// TestColumnListsMatchRows holds every entity's column list to the struct
// that scans it: each list is prepared on a real schema, and pgx must
// find a field for each column and a column for each field. A column
// added to a list but not to its struct (or the reverse, or a column
// renamed on one side) fails here, not in the first read that meets it.
func TestColumnListsMatchRows(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgtest.New(t).Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tests := []struct {
		name string
		sql  string
		scan func(pgx.CollectableRow) error
	}{
		{"message columns", `SELECT ` + messageColumns + ` FROM messages m`, byName[messageColumnsRow]},
		{"message with quote, thread and mentions", `SELECT ` + messageSelect + ` FROM messages m ` + messageJoins, byPosition[messageRow]},
		{"page of messages", messagePageSQL(false), byPosition[pageRow]},
		{"page of messages, backward", messagePageSQL(true), byPosition[pageRow]},
		{"room events", roomEventsSQL, byPosition[eventRow]},
		{"search by index", searchByIndex, byName[searchRow]},
		{"search by rooms", searchByRooms, byName[searchRow]},
		{"task", `SELECT ` + taskColumns + ` FROM tasks t`, byName[letagents.Task]},
		{"lease", activeLeasesSQL, byName[leaseRow]},
		{"reasoning session", `SELECT ` + sessionSelect("s") + ` FROM reasoning_sessions s`, byName[reasoningSessionRow]},
		{"reasoning update", `SELECT ` + updateSelect("u") + ` FROM reasoning_updates u`, byName[reasoningUpdateRow]},
		{"room", `SELECT ` + roomColumns + ` FROM rooms`, byName[letagents.Room]},
		{"board intent", `SELECT ` + intentColumns + ` FROM board_intents`, byName[intentRow]},
		{"agent", `SELECT ` + agentColumns + ` FROM agents`, byName[letagents.Agent]},
		{"artifact", `SELECT ` + artifactColumns + ` FROM room_artifacts a`, byName[letagents.Artifact]},
		{"agent session", `SELECT ` + sessionColumns("$1") + ` FROM agent_sessions s`, byName[sessionRow]},
		{"liveness", `SELECT ` + livenessColumns + ` FROM agent_sessions s ` + unsurfacedJoin, byName[livenessRow]},
		{"account", `SELECT ` + accountColumns + ` FROM accounts a`, byName[letagents.Account]},
		{"account by session", accountBySessionSQL, byName[accountSessionRow]},
		{"account by owner token", accountByOwnerTokenSQL, byName[accountTokenRow]},
		{"GitHub token", githubTokenSQL, byName[githubTokenRow]},
		{"device request", claimDeviceRequestSQL, byName[deviceRequestRow]},
		{"repo visibility", repoVisibilitySQL, byName[repoVisibilityRow]},
		{"repo access", repoAccessSQL, byName[repoAccessRow]},
		{"sender claim", claimSQL("$1", "$2", "$3", "$4", "$5"), byName[SenderClaim]},
		{"send signed by a session, with its checks", sendSigned.linked, byName[sendRow]},
		{"send signed by no session, with its checks", sendUnsigned.linked, byName[sendRow]},
		{"unlinked send signed by a session, with its checks", sendSigned.unlinked, byName[sendRow]},
		{"unlinked send signed by no session, with its checks", sendUnsigned.unlinked, byName[sendRow]},
		{"send", loneSend.linked, byName[sentRow]},
		{"unlinked send", loneSend.unlinked, byName[sentRow]},
		{"send in a transaction", txSend.linked, byName[sentRow]},
		{"unlinked send in a transaction", txSend.unlinked, byName[sentRow]},
		{"several sends signed by sessions, with their checks", sendSetSignedSQL, byName[sendRow]},
		{"several sends signed by no session, with their checks", sendSetUnsignedSQL, byName[sendRow]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sd, err := conn.Conn().Prepare(ctx, "", tt.sql)
			if err != nil {
				t.Fatalf("prepare %s: %v", tt.name, err)
			}
			if err := tt.scan(describedRow{sd.Fields}); err != nil {
				names := make([]string, len(sd.Fields))
				for i, f := range sd.Fields {
					names[i] = f.Name
				}
				t.Errorf("columns (%s) do not match the struct: %v", strings.Join(names, ", "), err)
			}
		})
	}
}
