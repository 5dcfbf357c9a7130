package buckettest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
)

// Table is the conformance table: every case on every store, and each
// difference from S3 a case named on a store. The zero value is empty and
// ready; a nil *Table records nothing.
type Table struct {
	mu     sync.Mutex
	stores []string
	cells  map[[2]string]*cell // {store, case}
}

type cell struct {
	ran, failed bool
	diffs       []string
}

func (tb *Table) cell(store, name string) *cell {
	if tb.cells == nil {
		tb.cells = map[[2]string]*cell{}
	}
	if !slices.Contains(tb.stores, store) {
		tb.stores = append(tb.stores, store)
	}
	c := tb.cells[[2]string{store, name}]
	if c == nil {
		c = &cell{}
		tb.cells[[2]string{store, name}] = c
	}
	return c
}

func (tb *Table) note(store, name, why string) {
	if tb == nil {
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	c := tb.cell(store, name)
	if !slices.Contains(c.diffs, why) {
		c.diffs = append(c.diffs, why)
	}
}

func (tb *Table) finish(store, name string, failed bool) {
	if tb == nil {
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	c := tb.cell(store, name)
	c.ran, c.failed = true, failed
}

// String renders the table: a row per case, a column per store, each cell
// "ok", "FAIL", or "ok [n]" where the case named difference n (listed
// below the table).
func (tb *Table) String() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var diffs []string
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "case\t%s\n", strings.Join(tb.stores, "\t"))
	for _, cs := range Cases {
		row := []string{cs.Name}
		for _, st := range tb.stores {
			c := tb.cells[[2]string{st, cs.Name}]
			switch {
			case c == nil || !c.ran:
				row = append(row, "not run")
				continue
			case c.failed:
				row = append(row, "FAIL")
				continue
			}
			cellText := "ok"
			var refs []string
			for _, d := range c.diffs {
				note := st + ": " + d
				i := slices.Index(diffs, note)
				if i < 0 {
					diffs = append(diffs, note)
					i = len(diffs) - 1
				}
				refs = append(refs, fmt.Sprint(i+1))
			}
			if len(refs) > 0 {
				cellText += " [" + strings.Join(refs, ",") + "]"
			}
			row = append(row, cellText)
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	w.Flush()
	for i, d := range diffs {
		fmt.Fprintf(&b, "[%d] %s\n", i+1, d)
	}
	return b.String()
}
