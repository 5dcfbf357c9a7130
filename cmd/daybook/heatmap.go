package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ops"
)

// heatmapWidth is the most days drawn on one line; longer ranges wrap into
// blocks, each with its own date axis.
const heatmapWidth = 90

// heatRow is one dataset's line: a phase per day ("" for no row).
type heatRow struct {
	label string
	cells []ops.Phase
	note  string
}

// drawHeatmap draws rows of cells over days, with a month and a day-of-month
// axis above, wrapping every heatmapWidth days.
func drawHeatmap(w io.Writer, days []civil.Date, rows []heatRow, color bool) {
	labelW := 0
	for _, r := range rows {
		labelW = max(labelW, len(r.label))
	}
	pad := strings.Repeat(" ", labelW+2)
	for start := 0; start < len(days); start += heatmapWidth {
		end := min(start+heatmapWidth, len(days))
		months, dom := axis(days[start:end])
		fmt.Fprintf(w, "%s%s\n%s%s\n", pad, months, pad, dom)
		for _, r := range rows {
			fmt.Fprintf(w, "%-*s  %s", labelW, r.label, cells(r.cells[start:end], color))
			if end == len(days) && r.note != "" {
				fmt.Fprintf(w, "  %s", r.note)
			}
			fmt.Fprintln(w)
		}
		if end < len(days) {
			fmt.Fprintln(w)
		}
	}
}

// cells renders one line of cells, one colour sequence per run of equal
// phases.
func cells(ps []ops.Phase, color bool) string {
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j < len(ps) && ps[j] == ps[i] {
			j++
		}
		if ps[i] == "" {
			b.WriteString(strings.Repeat(" ", j-i))
		} else {
			b.WriteString(paint(color, ps[i], strings.Repeat(string(ps[i].Symbol()), j-i)))
		}
		i = j
	}
	return strings.TrimRight(b.String(), " ")
}

// axis returns a month line (a label where each month starts, with the year
// on the first label that has room for it and on January) and a day-of-month line (the 1st of
// each month first, then the first day shown, then every 5th), one column
// per day; a label that would touch another is left out.
func axis(days []civil.Date) (months, dom string) {
	n := len(days)
	nextMonth := func(i int) int { // the column of the next 1st, or past the end
		for j := i + 1; j < n; j++ {
			if days[j].Day == 1 {
				return j
			}
		}
		return n + 9
	}
	m := newLabelLine(n)
	yearShown := false
	for i, day := range days {
		if i != 0 && day.Day != 1 {
			continue
		}
		room := nextMonth(i) - i
		label := day.Month.String()[:3]
		if withYear := label + " " + strconv.Itoa(day.Year); (!yearShown || day.Month == 1) && len(withYear) < room {
			label = withYear
		}
		if len(label) < room && m.place(i, label) && len(label) > 3 {
			yearShown = true
		}
	}
	d := newLabelLine(n)
	for pass := range 3 {
		for i, day := range days {
			if (pass == 0 && day.Day == 1) || (pass == 1 && i == 0) || (pass == 2 && day.Day%5 == 0) {
				d.place(i, strconv.Itoa(day.Day))
			}
		}
	}
	return m.String(), d.String()
}

// labelLine places labels on a line, keeping a blank between any two.
type labelLine []byte

func newLabelLine(n int) labelLine { return labelLine(strings.Repeat(" ", n+9)) }

func (l labelLine) place(at int, label string) bool {
	end := at + len(label)
	if end > len(l) {
		return false
	}
	for i := max(0, at-1); i < min(len(l), end+1); i++ {
		if l[i] != ' ' {
			return false
		}
	}
	copy(l[at:], label)
	return true
}

func (l labelLine) String() string { return strings.TrimRight(string(l), " ") }
