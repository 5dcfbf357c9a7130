package verify

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report a person reads: the partition's URI, one
// line per finding, and the verdict last.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString(r.Location + "\n")
	for _, f := range r.Findings {
		b.WriteString("  " + f.String() + "\n")
	}
	b.WriteString(r.Verdict() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Verdict is the report's last line.
func (r *Result) Verdict() string {
	switch r.Status {
	case StatusOK:
		return fmt.Sprintf("OK: generation %d, %d file(s), %d rows, %d bytes match the manifest", r.Generation, r.Files, r.Rows, r.Bytes)
	case StatusNotCommitted:
		return "NOT COMMITTED: no _SUCCESS; do not read this partition now (fall back to the latest day that has _SUCCESS)"
	case StatusLatestOnly:
		return "LATEST ONLY: a snapshot dataset has no copy of this day by design; read its latest day that has _SUCCESS"
	}
	return fmt.Sprintf("FAILED: %d problem(s); do not trust this partition", len(r.Problems()))
}

// String is the finding as one report line.
func (f Finding) String() string {
	return fmt.Sprintf("%-8s %-22s %s", f.Level, f.Subject, f.Detail)
}
