package main

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/doctable"
	"github.com/daybook-dev/daybook/shared/ops"
)

// TestDocsLegendIsTheCode: the states the docs name are the ones the CLI
// and the console show, read from their one list (ops.Phases): the
// status-map table of docs/operating.md has a row per phase with its
// symbol, --state name and legend, in display order, and every copy of the
// legend line on a page (README.md, docs/*.md: the demo's output, the
// operating page) is the one daybook status prints.
func TestDocsLegendIsTheCode(t *testing.T) {
	rows, err := doctable.Rows("../../docs/operating.md", "## The status map")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(ops.Phases)+1 {
		t.Fatalf("docs/operating.md's status map has %d rows, want one per phase (%s) and the blank cell", len(rows), ops.Names())
	}
	for i, p := range ops.Phases {
		want := []string{string(p.Symbol()), string(p), p.Legend()}
		if got := rows[i][:3]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("docs/operating.md row %d: %q, the code: %q", i+1, got, want)
		}
	}
	if last := rows[len(rows)-1]; last[0] != "(blank)" || last[2] != ops.BlankLegend {
		t.Errorf("docs/operating.md's blank row: %q, the code: %q", last, ops.BlankLegend)
	}
	line := legend(false)
	copies := 0
	for page, text := range docPages(t) {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "# completed  ") {
				copies++
				if l != line {
					t.Errorf("%s's legend:\n%s\ndaybook status prints:\n%s", page, l, line)
				}
			}
		}
	}
	if copies < 2 {
		t.Errorf("%d copies of the legend line in the docs, want the operating page's and the demo's", copies)
	}
}
