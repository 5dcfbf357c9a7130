package main

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/ops"
)

// phaseColor is each phase's ANSI SGR colour on a terminal.
var phaseColor = map[ops.Phase]string{
	ops.Completed: "32",
	ops.Running:   "34;1",
	ops.Claimed:   "36",
	ops.Requested: "33;1",
	ops.Queued:    "33",
	ops.Failed:    "31",
	ops.Stopped:   "35;1",
}

// parsePhases reads --state values (comma-separated or repeated).
func parsePhases(vals []string) (map[ops.Phase]bool, error) {
	m, err := ops.ParsePhases(vals)
	if err != nil {
		return nil, fmt.Errorf("--state %w", err)
	}
	return m, nil
}

func legend(color bool) string {
	var parts []string
	for _, p := range ops.Phases {
		parts = append(parts, paint(color, p, string(p.Symbol()))+" "+p.Legend())
	}
	return strings.Join(parts, "  ") + "  (blank) " + ops.BlankLegend
}

// paint colours s for p when color is on (and p has a colour).
func paint(color bool, p ops.Phase, s string) string {
	if !color || phaseColor[p] == "" {
		return s
	}
	return "\x1b[" + phaseColor[p] + "m" + s + "\x1b[0m"
}

// useColor: stdout is a terminal and NO_COLOR is not set.
func (a *app) useColor() bool {
	return a.terminal(a.stdout) && a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb"
}
