package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/console/ops"
)

// phase is what a partition is doing, in the words status shows (ops.Phase).
type phase = ops.Phase

const (
	phaseCompleted = ops.Completed
	phaseRunning   = ops.Running
	phaseClaimed   = ops.Claimed
	phaseRequested = ops.Requested
	phaseQueued    = ops.Queued
	phaseFailed    = ops.Failed
	phaseStopped   = ops.Stopped
)

// phases in display order.
var phases = ops.Phases

// phaseColor is each phase's ANSI SGR colour on a terminal.
var phaseColor = map[phase]string{
	phaseCompleted: "32",
	phaseRunning:   "34;1",
	phaseClaimed:   "36",
	phaseRequested: "33;1",
	phaseQueued:    "33",
	phaseFailed:    "31",
	phaseStopped:   "35;1",
}

func phaseNames() string { return ops.Names() }

// parsePhases reads --state values (comma-separated or repeated).
func parsePhases(vals []string) (map[phase]bool, error) {
	m, err := ops.ParsePhases(vals)
	if err != nil {
		return nil, fmt.Errorf("--state %w", err)
	}
	return m, nil
}

func legend(color bool) string {
	var parts []string
	for _, p := range phases {
		parts = append(parts, paint(color, p, string(p.Symbol()))+" "+p.Legend())
	}
	return strings.Join(parts, "  ") + "  (blank) " + ops.BlankLegend
}

// paint colours s for p when color is on (and p has a colour).
func paint(color bool, p phase, s string) string {
	if !color || phaseColor[p] == "" {
		return s
	}
	return "\x1b[" + phaseColor[p] + "m" + s + "\x1b[0m"
}

// useColor: stdout is a terminal and NO_COLOR is not set.
func (a *app) useColor() bool {
	return a.terminal(a.stdout) && a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb"
}

func fmtTime(t time.Time) string { return ops.FormatTime(t) }

func fmtDuration(ms int64) string { return ops.FormatDuration(ms) }

func humanBytes(n int64) string { return ops.HumanBytes(n) }
