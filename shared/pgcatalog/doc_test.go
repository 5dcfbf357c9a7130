package pgcatalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/doctable"

	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// docTable returns the rows of the markdown table under heading in
// docs/types.md, cells trimmed and backticks dropped.
func docTable(t *testing.T, heading string) [][]string {
	t.Helper()
	rows, err := doctable.Rows("../../docs/types.md", heading)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestDocPostgresTypes creates a column of every PostgreSQL type the
// mapping table names in a real database and maps it as catalog init does.
func TestDocPostgresTypes(t *testing.T) {
	db := pgDB(t, true)
	rows := docTable(t, "## PostgreSQL type → catalog type")
	pgExec(t, db, `CREATE TYPE mood AS ENUM ('sad', 'ok')`)
	var cols []string
	for i, r := range rows {
		typ := r[0]
		if typ == "enum" {
			typ = "mood"
		}
		cols = append(cols, fmt.Sprintf("c%d %s", i, typ))
	}
	pgExec(t, db, "CREATE TABLE doc_types ("+strings.Join(cols, ", ")+")")
	tab, err := pgcatalog.ReadTable(context.Background(), db, "doc_types")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		m, err := pgcatalog.Map(tab.Columns[i].Type)
		got := m.Type.String()
		if err != nil {
			got = "refused"
		}
		if got != r[1] {
			t.Errorf("docs/types.md: %s maps to %s, the code to %s (%v)", r[0], r[1], got, err)
		}
		if strings.Contains(r[2], "source_time_zone") != m.LocalTime {
			t.Errorf("docs/types.md: %s: the notes say source_time_zone is needed: %v; the code: %v", r[0], !m.LocalTime, m.LocalTime)
		}
		if strings.Contains(r[2], "dictionary") != m.Enum {
			t.Errorf("docs/types.md: %s: enum %v in the notes, %v in the code", r[0], !m.Enum, m.Enum)
		}
	}
}
