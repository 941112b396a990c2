package migrations_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/migrations"
)

// A deploy migrates before it updates what serves, and a failed deploy
// rolls back to the build before with the schema left migrated, so every
// migration must leave that build able to serve: a column or table it
// uses may be dropped or renamed only by a migration shipped after no
// deployed build uses it (docs/deploy.md, "Schema changes"). The test
// cannot know what an older build uses; it makes every drop and rename a
// reviewed decision, listed here with why it is safe.
var contracted = map[string]string{
	"0008_rate_buckets.sql DROP TABLE rate_limits": "shipped before this rule; an applied migration is never edited, so it stays as it ran",
}

// schemaBreak finds the statements that take away something a build may
// use: DROP TABLE, DROP COLUMN, and RENAME of a table or column. Dropped
// constraints and indexes only widen what is allowed.
var schemaBreak = regexp.MustCompile(`(?i)\b(DROP\s+TABLE(?:\s+IF\s+EXISTS)?\s+\w+|DROP\s+COLUMN(?:\s+IF\s+EXISTS)?\s+\w+|RENAME\s+(?:COLUMN\s+)?\w+\s+TO\s+\w+|RENAME\s+TO\s+\w+)`)

func TestMigrationsTakeNothingAwayUnreviewed(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, name := range files {
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range schemaBreak.FindAllString(withoutComments(string(b)), -1) {
			key := name + " " + strings.Join(strings.Fields(m), " ")
			seen[key] = true
			if contracted[key] == "" {
				t.Errorf("%s: %q takes away what the build before may still use; ship it in a later release "+
					"(docs/deploy.md, \"Schema changes\"), then list %q in contracted with why it is safe", name, m, key)
			}
		}
	}
	for key := range contracted {
		if !seen[key] {
			t.Errorf("contracted lists %q, which no migration does", key)
		}
	}
}

// withoutComments drops SQL line comments, which may well say "drop".
func withoutComments(sql string) string {
	lines := strings.Split(sql, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "--"); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}
