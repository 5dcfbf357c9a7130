package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// dayStatus is one partition in the account view.
type dayStatus struct {
	Day            string `json:"day"`
	State          phase  `json:"state"`
	Attempts       int    `json:"attempts,omitempty"`
	Reason         string `json:"reason,omitempty"`
	Generation     int64  `json:"generation,omitempty"`
	Rows           int64  `json:"rows,omitempty"`
	Bytes          int64  `json:"bytes,omitempty"`
	Files          int    `json:"files,omitempty"`
	Error          string `json:"error,omitempty"`
	ClaimedAt      string `json:"claimed_at,omitempty"`
	StartedAt      string `json:"started_at,omitempty"`
	LeaseUntil     string `json:"lease_until,omitempty"`
	NextAttemptAt  string `json:"next_attempt_at,omitempty"`
	CompletedAt    string `json:"completed_at,omitempty"`
	RerunRequested bool   `json:"rerun_requested,omitempty"`
	// LeaseExpired: a claimed or running partition whose lease ran out (its
	// exporter died or its job waited too long); a sweep claims it again.
	LeaseExpired bool `json:"lease_expired,omitempty"`
}

type datasetStatus struct {
	Dataset string        `json:"dataset"`
	Counts  map[phase]int `json:"counts"`
	Before  map[phase]int `json:"before_window,omitempty"`
	After   map[phase]int `json:"after_window,omitempty"`
	Days    []dayStatus   `json:"days"`
}

type accountStatusOut struct {
	Account       string          `json:"account"`
	Name          string          `json:"name"`
	Enabled       bool            `json:"enabled"`
	TimeZone      string          `json:"time_zone"`
	StartDate     string          `json:"start_date"`
	ClosedThrough string          `json:"closed_through"`
	From          string          `json:"from"`
	To            string          `json:"to"`
	Datasets      []datasetStatus `json:"datasets"`
}

func toDayStatus(r ledger.Row, now time.Time) dayStatus {
	return dayStatus{
		Day: r.Day.String(), State: phaseOf(r), Attempts: r.Attempts, Reason: string(r.Reason), Generation: r.Generation,
		Rows: r.Rows, Bytes: r.Bytes, Files: r.Files, Error: r.LastError, ClaimedAt: fmtTime(r.ClaimedAt),
		StartedAt: fmtTime(r.StartedAt), LeaseUntil: fmtTime(r.LeaseUntil), NextAttemptAt: fmtTime(r.NextAttemptAt),
		CompletedAt: fmtTime(r.CompletedAt), RerunRequested: r.RerunRequested,
		LeaseExpired: r.State == ledger.StateRunning && !r.LeaseUntil.IsZero() && r.LeaseUntil.Before(now),
	}
}

func (a *app) accountStatus(ctx context.Context, f statusFlags, states map[phase]bool, from, to civil.Date, out outputFormat) error {
	e, acct, err := a.account(ctx, f.account, "--account")
	if err != nil {
		return err
	}
	d := acct.WithDefaults(e.settle)
	closed := d.ClosedThrough(a.now())
	if to.IsZero() {
		to = closed
	}
	if from.IsZero() {
		n := f.days
		if n == 0 {
			n = 90
		}
		from = to.AddDays(-n + 1)
		if from.Before(acct.StartDate) {
			from = acct.StartDate
		}
	}
	res := accountStatusOut{Account: acct.ID, Name: acct.Name, Enabled: acct.Enabled, TimeZone: d.TimeZone,
		StartDate: acct.StartDate.String(), ClosedThrough: closed.String(), From: from.String(), To: to.String()}
	datasets := acct.Datasets
	if len(f.datasets) > 0 {
		datasets = slices.DeleteFunc(slices.Clone(acct.Datasets), func(ds string) bool { return !slices.Contains(f.datasets, ds) })
		if len(datasets) == 0 {
			return fmt.Errorf("--dataset %s: account %s exports none of them; its datasets: %s", strings.Join(f.datasets, ","), acct.ID, strings.Join(acct.Datasets, ", "))
		}
	}
	for _, ds := range datasets {
		rows, err := e.ledger.List(ctx, acct.ID, ds, firstDay, lastDay)
		if err != nil {
			return err
		}
		st := datasetStatus{Dataset: ds, Counts: map[phase]int{}, Before: map[phase]int{}, After: map[phase]int{}, Days: []dayStatus{}}
		for _, r := range rows {
			p := phaseOf(r)
			if len(states) > 0 && !states[p] {
				continue
			}
			switch {
			case r.Day.Before(from):
				st.Before[p]++
			case r.Day.After(to):
				st.After[p]++
			default:
				st.Counts[p]++
				st.Days = append(st.Days, toDayStatus(r, a.now()))
			}
		}
		res.Datasets = append(res.Datasets, st)
	}
	if out == outputJSON {
		return printJSON(a.stdout, res)
	}
	a.printAccountStatus(res, from, to, states)
	return nil
}

func countsText(m map[phase]int) string {
	var parts []string
	for _, p := range phases {
		if m[p] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p, m[p]))
		}
	}
	if len(parts) == 0 {
		return "no partitions"
	}
	return strings.Join(parts, ", ")
}

func (a *app) printAccountStatus(res accountStatusOut, from, to civil.Date, states map[phase]bool) {
	w := a.stdout
	color := a.useColor()
	enabled := ""
	if !res.Enabled {
		enabled = "  DISABLED"
	}
	fmt.Fprintf(w, "account %s  %s  zone %s  start %s  closed through %s%s\n", res.Account, res.Name, res.TimeZone, res.StartDate, res.ClosedThrough, enabled)
	if to.Before(from) {
		fmt.Fprintf(w, "no day to show: the window %s..%s is empty (the account starts %s)\n", from, to, res.StartDate)
		return
	}
	filter := ""
	if len(states) > 0 {
		var ss []string
		for _, p := range phases {
			if states[p] {
				ss = append(ss, string(p))
			}
		}
		filter = ", only " + strings.Join(ss, ", ")
	}
	days := civil.Range(from, to)
	fmt.Fprintf(w, "days %s..%s (%d)%s\n\n", from, to, len(days), filter)
	var rows []heatRow
	for _, ds := range res.Datasets {
		byDay := map[string]phase{}
		for _, d := range ds.Days {
			byDay[d.Day] = d.State
		}
		cells := make([]phase, len(days))
		for i, d := range days {
			cells[i] = byDay[d.String()]
		}
		rows = append(rows, heatRow{label: ds.Dataset, cells: cells, note: countsText(ds.Counts)})
	}
	drawHeatmap(w, days, rows, color)
	fmt.Fprintf(w, "\n%s\n", legend(color))
	for _, ds := range res.Datasets {
		if len(ds.Before) > 0 {
			fmt.Fprintf(w, "%s before %s: %s (show them with --from)\n", ds.Dataset, from, countsText(ds.Before))
		}
		if len(ds.After) > 0 {
			fmt.Fprintf(w, "%s after %s: %s (show them with --to)\n", ds.Dataset, to, countsText(ds.After))
		}
	}
	var lines []string
	for _, ds := range res.Datasets {
		for _, d := range ds.Days {
			if line := attention(ds.Dataset, d, len(states) > 0); line != "" {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w)
		const most = 50
		for _, l := range lines[:min(most, len(lines))] {
			fmt.Fprintln(w, l)
		}
		if len(lines) > most {
			fmt.Fprintf(w, "  ... and %d more (-o json lists every day)\n", len(lines)-most)
		}
	}
}

// attention describes a partition an operator may need to look at (every
// listed partition when the view is filtered by state), or returns "".
func attention(ds string, d dayStatus, all bool) string {
	switch d.State {
	case phaseFailed, phaseStopped, phaseClaimed, phaseRunning:
	default:
		if !all {
			return ""
		}
	}
	return fmt.Sprintf("  %s %s  %s", ds, d.Day, describe(d))
}

func expired(d dayStatus) string {
	if d.LeaseExpired {
		return ", expired: the next sweep claims it again"
	}
	return ""
}

// describe says what a partition is doing, in a sentence.
func describe(d dayStatus) string {
	switch d.State {
	case phaseFailed:
		return fmt.Sprintf("failed on attempt %d, next attempt %s: %s", d.Attempts, d.NextAttemptAt, d.Error)
	case phaseStopped:
		return fmt.Sprintf("stopped retrying after %d attempts (daybook requeue retries it): %s", d.Attempts, d.Error)
	case phaseClaimed:
		return fmt.Sprintf("claimed at %s, its job waits in the queue (lease until %s%s)", d.ClaimedAt, d.LeaseUntil, expired(d))
	case phaseRunning:
		return fmt.Sprintf("running attempt %d since %s (lease until %s%s)", d.Attempts, d.StartedAt, d.LeaseUntil, expired(d))
	case phaseCompleted:
		return fmt.Sprintf("completed, generation %d, %d rows in %d files (%s) at %s", d.Generation, d.Rows, d.Files, humanBytes(d.Bytes), d.CompletedAt)
	}
	return fmt.Sprintf("%s (reason %s)", d.State, cmp.Or(d.Reason, "-"))
}
