package ops

import (
	"cmp"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/ledger"
)

// Day is one partition as status and the console show it.
type Day struct {
	Day        string `json:"day"`
	State      Phase  `json:"state"`
	Attempts   int    `json:"attempts,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	Rows       int64  `json:"rows,omitempty"`
	Bytes      int64  `json:"bytes,omitempty"`
	Files      int    `json:"files,omitempty"`
	Error      string `json:"error,omitempty"`
	// TableError: the generation was delivered and the dataset's Iceberg
	// table did not take it (ledger.Row.TableError).
	TableError     string `json:"table_error,omitempty"`
	ClaimedAt      string `json:"claimed_at,omitempty"`
	StartedAt      string `json:"started_at,omitempty"`
	LeaseUntil     string `json:"lease_until,omitempty"`
	NextAttemptAt  string `json:"next_attempt_at,omitempty"`
	CompletedAt    string `json:"completed_at,omitempty"`
	ManifestKey    string `json:"manifest_key,omitempty"`
	RerunRequested bool   `json:"rerun_requested,omitempty"`
	// RequestedBy is who asked for the manual action the partition is
	// queued, running or was last exported for.
	RequestedBy string `json:"requested_by,omitempty"`
	// ReexportRequestedAt and ReexportRequestedBy: a re-export request sent
	// for the day that no exporter has claimed yet (its phase is
	// Requested), when and by whom.
	ReexportRequestedAt string `json:"reexport_requested_at,omitempty"`
	ReexportRequestedBy string `json:"reexport_requested_by,omitempty"`
	// LeaseExpired: a claimed or running partition whose lease ran out (its
	// exporter died or its job waited too long); a sweep claims it again.
	LeaseExpired bool `json:"lease_expired,omitempty"`
}

// DayOf is a ledger row as a Day, at the clock now.
func DayOf(r ledger.Row, now time.Time) Day {
	return Day{
		Day: r.Day.String(), State: Of(r), Attempts: r.Attempts, Reason: string(r.Reason), Generation: r.Generation,
		Rows: r.Rows, Bytes: r.Bytes, Files: r.Files, Error: r.LastError, TableError: r.TableError, ClaimedAt: FormatTime(r.ClaimedAt),
		StartedAt: FormatTime(r.StartedAt), LeaseUntil: FormatTime(r.LeaseUntil), NextAttemptAt: FormatTime(r.NextAttemptAt),
		CompletedAt: FormatTime(r.CompletedAt), ManifestKey: r.ManifestKey, RerunRequested: r.RerunRequested, RequestedBy: r.RequestedBy,
		ReexportRequestedAt: FormatTime(r.ReexportRequestedAt), ReexportRequestedBy: r.ReexportRequestedBy,
		LeaseExpired: r.State == ledger.StateRunning && !r.LeaseUntil.IsZero() && r.LeaseUntil.Before(now),
	}
}

func expired(d Day) string {
	if d.LeaseExpired {
		return ", expired: the next sweep claims it again"
	}
	return ""
}

// Describe says what a partition is doing, in a sentence.
func Describe(d Day) string {
	switch d.State {
	case Failed:
		return fmt.Sprintf("failed on attempt %d, next attempt %s: %s", d.Attempts, d.NextAttemptAt, d.Error)
	case Stopped:
		return fmt.Sprintf("stopped retrying after %d attempts (an operator's retry tries it again): %s", d.Attempts, d.Error)
	case Claimed:
		return fmt.Sprintf("claimed at %s, its job waits in the queue (lease until %s%s)", d.ClaimedAt, d.LeaseUntil, expired(d))
	case Running:
		return fmt.Sprintf("running attempt %d since %s (lease until %s%s)", d.Attempts, d.StartedAt, d.LeaseUntil, expired(d))
	case Requested:
		by := ""
		if d.ReexportRequestedBy != "" {
			by = " by " + d.ReexportRequestedBy
		}
		was := ""
		switch {
		case d.CompletedAt != "" && d.Error == "":
			was = fmt.Sprintf("; generation %d stays delivered until the exporter writes the next", d.Generation)
		case d.Error != "":
			was = "; the last attempt failed: " + d.Error
		}
		return fmt.Sprintf("re-export requested%s at %s, waiting in the jobs queue for an exporter%s", by, d.ReexportRequestedAt, was)
	case Completed:
		files := "files"
		if d.Files == 1 {
			files = "file"
		}
		s := fmt.Sprintf("completed, generation %d, %d rows in %d %s (%s) at %s", d.Generation, d.Rows, d.Files, files, HumanBytes(d.Bytes), d.CompletedAt)
		if d.TableError != "" {
			s += "; its Iceberg table did not take it: " + d.TableError
		}
		return s
	}
	return fmt.Sprintf("%s (reason %s)", d.State, cmp.Or(d.Reason, "-"))
}

// FormatTime is a UTC timestamp to the second, "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// FormatDuration rounds a duration in milliseconds for reading; "-" when
// there is none.
func FormatDuration(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	d := time.Duration(ms) * time.Millisecond
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// HumanBytes is a byte count in B, KiB, MiB or GiB.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
