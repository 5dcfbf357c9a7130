package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/ledger"
)

// phase is what a partition is doing, in the words status shows. It tells
// a claim whose job waits in the queue apart from a run an exporter started.
type phase string

const (
	phaseCompleted phase = "completed"
	phaseRunning   phase = "running" // an exporter started it
	phaseClaimed   phase = "claimed" // a sweep claimed it; its job waits in the queue
	phaseQueued    phase = "queued"  // asked for by an operator or a backfill; goes first
	phasePending   phase = "pending" // closed, not tried yet
	phaseFailed    phase = "failed"  // will retry after its backoff
	phaseStopped   phase = "stopped" // failed too often; waits for daybook requeue
)

// phases in display order.
var phases = []phase{phaseCompleted, phaseRunning, phaseClaimed, phaseQueued, phasePending, phaseFailed, phaseStopped}

var phaseInfo = map[phase]struct {
	symbol byte
	color  string // ANSI SGR
	legend string
}{
	phaseCompleted: {'#', "32", "completed"},
	phaseRunning:   {'>', "34;1", "running"},
	phaseClaimed:   {'~', "36", "claimed, waiting in the queue"},
	phaseQueued:    {'q', "33", "queued"},
	phasePending:   {'.', "90", "pending"},
	phaseFailed:    {'x', "31", "failed, will retry"},
	phaseStopped:   {'X', "35;1", "stopped retrying"},
}

func phaseOf(r ledger.Row) phase {
	switch r.State {
	case ledger.StateCompleted:
		return phaseCompleted
	case ledger.StateRunning:
		if r.StartedAt.IsZero() {
			return phaseClaimed
		}
		return phaseRunning
	case ledger.StateQueued:
		return phaseQueued
	case ledger.StatePending:
		return phasePending
	case ledger.StateFailed:
		if r.Exhausted || strings.HasPrefix(r.DueKey, "9#") {
			return phaseStopped
		}
		return phaseFailed
	}
	return phase(r.State)
}

// parsePhases reads --state values (comma-separated or repeated).
func parsePhases(vals []string) (map[phase]bool, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	want := map[phase]bool{}
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			p := phase(strings.TrimSpace(s))
			if _, ok := phaseInfo[p]; !ok {
				names := make([]string, len(phases))
				for i, p := range phases {
					names[i] = string(p)
				}
				return nil, fmt.Errorf("--state %q: unknown state; valid: %s", s, strings.Join(names, ", "))
			}
			want[p] = true
		}
	}
	return want, nil
}

func legend(color bool) string {
	var parts []string
	for _, p := range phases {
		parts = append(parts, paint(color, p, string(phaseInfo[p].symbol))+" "+phaseInfo[p].legend)
	}
	return strings.Join(parts, "  ")
}

// paint colours s for p when color is on.
func paint(color bool, p phase, s string) string {
	if !color {
		return s
	}
	return "\x1b[" + phaseInfo[p].color + "m" + s + "\x1b[0m"
}

// useColor: stdout is a terminal and NO_COLOR is not set.
func (a *app) useColor() bool {
	return a.terminal(a.stdout) && a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb"
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

func fmtDuration(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	d := time.Duration(ms) * time.Millisecond
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
