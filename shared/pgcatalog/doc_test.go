package pgcatalog_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// docTable returns the rows of the markdown table under heading in
// docs/types.md, cells trimmed and backticks dropped.
func docTable(t *testing.T, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/types.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/types.md has no heading %q", heading)
	}
	var rows [][]string
	sc := bufio.NewScanner(strings.NewReader(after))
	header := true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 || !header {
				break
			}
			continue
		}
		if header || strings.HasPrefix(line, "|---") {
			header = false
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.ReplaceAll(strings.TrimSpace(c), "`", ""))
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("docs/types.md: no rows under %q", heading)
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
