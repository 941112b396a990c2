package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// Outside Lambda it migrates once and says where the schema is.
func TestRunMigratesOnce(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	latest, err := db.Latest(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DB_URL": d.URL}
	for i := range 2 {
		var out bytes.Buffer
		if err := run(context.Background(), func(k string) string { return env[k] }, &out); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if want := fmt.Sprintf("schema at migration %d\n", latest); out.String() != want {
			t.Errorf("run %d printed %q, want %q", i+1, out.String(), want)
		}
	}
	if err := db.CheckSchema(context.Background(), d.Pool, migrations.FS); err != nil {
		t.Errorf("after run: %v", err)
	}
	if err := run(context.Background(), func(string) string { return "" }, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "DB_URL") {
		t.Errorf("run without a database = %v, want an error naming DB_URL", err)
	}
}
