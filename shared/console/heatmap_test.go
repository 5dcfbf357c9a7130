package console

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ops"
)

// labels are the non-empty entries of a label line, as "column:label".
func labels(line []string) string {
	var out []string
	for i, l := range line {
		if l != "" {
			out = append(out, strings.Join([]string{itoa(i), l}, ":"))
		}
	}
	return strings.Join(out, " ")
}

func itoa(i int) string { return thousands(i) }

func TestAxisLabels(t *testing.T) {
	t.Parallel()
	days := func(from, to string) []civil.Date { return civil.Range(civil.MustParse(from), civil.MustParse(to)) }
	tests := []struct {
		name          string
		days          []civil.Date
		months, ticks string
	}{
		{"a week: every day", days("2026-11-03", "2026-11-09"),
			"0:Nov 2026", "0:3 1:4 2:5 3:6 4:7 5:8 6:9"},
		// A short range's columns are at most 3rem wide: a label whose month
		// ends a column or two later would run into the next (it did).
		{"a week across a month's end: no label runs into the next", days("2026-11-30", "2026-12-06"),
			"0:Nov 1:Dec 2026", "0:30 1:1 2:2 3:3 4:4 5:5 6:6"},
		{"a fortnight ending two days into a month", days("2026-11-18", "2026-12-02"),
			"0:Nov 2026 13:Dec", "0:18 1:19 2:20 3:21 4:22 5:23 6:24 7:25 8:26 9:27 10:28 11:29 12:30 13:1 14:2"},
		{"two months: the 1st and every 5th", days("2026-10-20", "2026-11-29"),
			"0:Oct 2026 12:Nov", "0:20 5:25 12:1 16:5 21:10 26:15 31:20 36:25"},
		{"a quarter: the 1st, 10th and 20th", days("2026-09-01", "2026-11-29"),
			"0:Sep 2026 30:Oct 61:Nov", "0:1 9:10 19:20 30:1 39:10 49:20 61:1 70:10 80:20"},
		{"a short first month gets a short label", days("2026-08-29", "2026-11-29"),
			"0:Aug 3:Sep 2026 33:Oct 64:Nov", "3:1 12:10 22:20 33:1 42:10 52:20 64:1 73:10 83:20"},
		{"a first month too short for any label", days("2026-08-31", "2026-11-29"),
			"1:Sep 2026 31:Oct 62:Nov", "1:1 10:10 20:20 31:1 40:10 50:20 62:1 71:10 81:20"},
		{"400 days: months, the year on the first and on January, no ticks", days("2025-10-26", "2026-11-29"),
			"6:Nov 2025 36:Dec 67:Jan 2026 98:Feb 126:Mar 157:Apr 187:May 218:Jun 248:Jul 279:Aug 310:Sep 340:Oct 371:Nov", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ticks := axisLabels(tt.days)
			if got := labels(m); got != tt.months {
				t.Errorf("months %q, want %q", got, tt.months)
			}
			if got := labels(ticks); got != tt.ticks {
				t.Errorf("ticks %q, want %q", got, tt.ticks)
			}
		})
	}
}

func TestHeatmapCells(t *testing.T) {
	t.Parallel()
	v := ops.AccountDays{Account: troubled, Datasets: []ops.DatasetDays{{Dataset: "events", Counts: map[ops.Phase]int{ops.Completed: 1, ops.Failed: 1},
		Days: []ops.Day{
			{Day: "2026-11-02", State: ops.Completed, Generation: 3, Rows: 1500, Bytes: 2048, Attempts: 1},
			{Day: "2026-11-03", State: ops.Failed, Attempts: 2, Error: "boom"},
			{Day: "2026-11-04", State: ops.Completed, Generation: 1, Rows: 0, Attempts: 1},
		}}}}
	for _, tt := range []struct {
		name    string
		to      string
		wide    bool
		symbols string
	}{
		{"a few days: symbols on all but completed, 0 on a day of no rows", "2026-11-04", true, ",,x,0"},
		{"many days: no symbols", "2027-02-01", false, ",,,"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := buildHeatmap(v, civil.MustParse("2026-11-01"), civil.MustParse(tt.to))
			if h.Wide != tt.wide || len(h.Rows) != 1 {
				t.Fatalf("wide %v, %d rows", h.Wide, len(h.Rows))
			}
			c := h.Rows[0].Cells
			if got := c[0].Symbol + "," + c[1].Symbol + "," + c[2].Symbol + "," + c[3].Symbol; got != tt.symbols {
				t.Errorf("symbols %q, want %q", got, tt.symbols)
			}
			if c[0].Phase != "" || c[0].Href != "" || c[0].Title != "events 2026-11-01: no ledger row" {
				t.Errorf("a day without a row: %+v", c[0])
			}
			if c[1].Title != "events 2026-11-02: completed · generation 3 · 1,500 rows · 2.0 KiB · attempts 1" ||
				c[1].Href != "/accounts/"+troubled+"/partitions/events/2026-11-02" {
				t.Errorf("completed cell %+v", c[1])
			}
			if c[2].Title != "events 2026-11-03: failed, will retry · attempts 2 · error: boom" {
				t.Errorf("failed cell %+v", c[2])
			}
			// A day of 0 rows is told apart from a full one, also where
			// the cells are too narrow for a symbol.
			if !c[3].NoRows || c[1].NoRows || c[3].Title != "events 2026-11-04: completed · generation 1 · 0 rows · 0 B · attempts 1" {
				t.Errorf("0-row cell %+v, full cell %+v", c[3], c[1])
			}
		})
	}
}
