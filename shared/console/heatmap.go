package console

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ops"
)

// Heatmap sizes: up to wideDays days each cell carries its phase's symbol
// as well as its colour and pattern; up to tickDays days the axis has
// day-of-month ticks under the month labels.
const (
	wideDays = 62
	tickDays = 120
	// heatmapPx is the narrowest the heatmap is drawn, for deciding which
	// month labels have room.
	heatmapPx = 1000
	// wideColPx is a wide heatmap's widest column: console.css's
	// `.hm.wide .hm-col { max-width: 3rem }` at 15 px a rem, and its 1 px gap.
	wideColPx = 46
)

// noRowsSymbol marks a completed day of 0 rows in a wide heatmap.
const noRowsSymbol = "0"

// heatmap is an account's datasets by day: a column per day.
type heatmap struct {
	Wide     bool
	HasTicks bool
	Days     int
	Months   []string // per column: a month label where one starts, else ""
	Ticks    []string // per column: a day-of-month tick, else ""
	Rows     []heatRow
}

type heatRow struct {
	Dataset string
	Cells   []heatCell
	Counts  string
}

// heatCell is one partition; Phase is "" for a day without a ledger row.
type heatCell struct {
	Phase ops.Phase
	// NoRows: completed with 0 rows, drawn lighter (and marked 0 when
	// wide) so an empty day does not pass for a full one.
	NoRows bool
	Symbol string
	Title  string
	Href   string
}

// partitionHref is the partition page of (account, dataset, day).
func partitionHref(accountID, dataset, day string) string {
	return "/accounts/" + url.PathEscape(accountID) + "/partitions/" + url.PathEscape(dataset) + "/" + url.PathEscape(day)
}

// cellTitle says everything the cell stands for, for its title attribute.
func cellTitle(ds string, d ops.Day) string {
	parts := []string{ds + " " + d.Day + ": " + d.State.Legend()}
	if d.Generation > 0 {
		parts = append(parts, fmt.Sprintf("generation %d", d.Generation))
	}
	if d.State == ops.Completed || d.Rows > 0 {
		parts = append(parts, thousands(d.Rows)+" rows", ops.HumanBytes(d.Bytes))
	}
	if d.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("attempts %d", d.Attempts))
	}
	if d.Error != "" {
		parts = append(parts, "error: "+d.Error)
	}
	return strings.Join(parts, " · ")
}

// buildHeatmap lays out v's days from `from` through `to`.
func buildHeatmap(v ops.AccountDays, from, to civil.Date) heatmap {
	days := civil.Range(from, to)
	h := heatmap{Days: len(days), Wide: len(days) <= wideDays}
	h.Months, h.Ticks = axisLabels(days)
	h.HasTicks = slices.ContainsFunc(h.Ticks, func(t string) bool { return t != "" })
	for _, ds := range v.Datasets {
		byDay := map[string]ops.Day{}
		for _, d := range ds.Days {
			byDay[d.Day] = d
		}
		row := heatRow{Dataset: ds.Dataset, Counts: ops.CountsText(ds.Counts), Cells: make([]heatCell, len(days))}
		for i, day := range days {
			d, ok := byDay[day.String()]
			if !ok {
				row.Cells[i] = heatCell{Title: ds.Dataset + " " + day.String() + ": no ledger row"}
				continue
			}
			c := heatCell{Phase: d.State, Title: cellTitle(ds.Dataset, d), Href: partitionHref(v.Account, ds.Dataset, d.Day)}
			c.NoRows = d.State == ops.Completed && d.Rows == 0
			switch {
			case h.Wide && c.NoRows:
				c.Symbol = noRowsSymbol
			case h.Wide && d.State != ops.Completed:
				// Completed is the one plain full cell; every other phase is
				// marked, so the exceptions stand out.
				c.Symbol = string(d.State.Symbol())
			}
			row.Cells[i] = c
		}
		h.Rows = append(h.Rows, row)
	}
	return h
}

// axisLabels returns a month label at each column where a month starts and
// the label has room before the next one (with the year on the first label
// and on January), and day-of-month ticks for shorter ranges.
func axisLabels(days []civil.Date) (months, ticks []string) {
	n := len(days)
	months, ticks = make([]string, n), make([]string, n)
	// room is how many columns a label of k characters needs (about 7 px a
	// character and a gap) at the narrowest width: the heatmap's, shared by
	// the columns, but in a wide heatmap a column is at most wideColPx
	// wide (console.css), so a short range's columns are narrower than
	// their share and its labels need more of them.
	colPx := float64(heatmapPx) / float64(n)
	if n <= wideDays {
		colPx = min(colPx, wideColPx)
	}
	room := func(k int) int { return int(float64(k*7+8) / colPx) }
	nextStart := func(i int) int {
		for j := i + 1; j < n; j++ {
			if days[j].Day == 1 {
				return j
			}
		}
		return n + n/8
	}
	yearShown := false
	for i, d := range days {
		if i != 0 && d.Day != 1 {
			continue
		}
		space := nextStart(i) - i
		short := d.Month.String()[:3]
		long := short + " " + strconv.Itoa(d.Year)
		switch {
		case (!yearShown || d.Month == 1) && space > room(len(long)):
			months[i], yearShown = long, true
		case space > room(len(short)):
			months[i] = short
		}
	}
	var tick func(d civil.Date) bool
	switch {
	case n <= 31:
		tick = func(civil.Date) bool { return true }
	case n <= wideDays:
		tick = func(d civil.Date) bool { return d.Day == 1 || d.Day%5 == 0 && d.Day < 30 }
	case n <= tickDays:
		tick = func(d civil.Date) bool { return d.Day == 1 || d.Day == 10 || d.Day == 20 }
	default:
		return months, ticks
	}
	for i, d := range days {
		if tick(d) {
			ticks[i] = strconv.Itoa(d.Day)
		}
	}
	return months, ticks
}
