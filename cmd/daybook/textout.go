package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// What the CLI prints from the ledger and from account records (names,
// errors, reasons, requested_by) was written by someone else: a name with a
// newline would forge a row of a table, one with a terminal escape sequence
// would rewrite the screen. Every table and text line that prints such a
// value passes it through printable; a table's cells all do (table.row).

// printable returns s with every control or format character (newline,
// tab, ESC, bidirectional overrides, zero-width characters) and every byte
// that is not UTF-8 written as a Go escape (\n, \x1b, \u202e), so the text
// is shown, never interpreted by the terminal. Other text is unchanged.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// table is a tab-aligned table of printable cells.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table { return &table{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)} }

// row writes one row: each cell formatted with fmt.Sprint and made
// printable, so no cell can end the row or the column.
func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = printable(fmt.Sprint(c))
	}
	fmt.Fprintln(t.tw, strings.Join(s, "\t"))
}

// header writes the column names, separated by tabs.
func (t *table) header(cols string) { fmt.Fprintln(t.tw, cols) }

func (t *table) Flush() error { return t.tw.Flush() }
