// Package ops is what the operator CLI (cmd/daybook) and the web console
// (shared/console) both do with the ledger: the phase of a partition in
// operators' words, the fleet summary, an account's days, a partition's
// history, the check of a manual request, and the actions (retry,
// re-export, enable and disable an account). It reads and writes through
// narrow interfaces that Ledger (the ledger aggregates it uses) and the SQS client satisfy, and
// knows nothing about flags, terminals or HTTP.
package ops

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/ledger"
)

// Phase is what a partition is doing, in the words status and the console
// show: each name says where the partition is. It tells a day in the jobs
// queue apart from a run an exporter started, a re-export request on its
// way apart from a day at rest, and a failure that will retry from one
// that stopped retrying. The ledger keeps its own names (ledger.PhaseOf,
// and the fleet summaries' stored counts); fromLedger is the one place that
// maps them, and phases below the one list of the operators' words.
type Phase string

// The phases. The identifiers keep the ledger's words; the values are
// what an operator reads.
const (
	Completed Phase = "completed"
	Running   Phase = "running"  // an exporter started it
	Claimed   Phase = "in-queue" // a sweep claimed it; its job waits in the jobs queue for an exporter
	// Requested: an operator sent a re-export request (the console, `daybook
	// reexport`) that no exporter has claimed yet; the day is otherwise as it
	// was (a completed day stays delivered until the new generation).
	Requested Phase = "requested"
	// Queued is due: it waits for a sweep, a closed day not tried yet (the
	// ledger's pending) or one asked for by an operator or a backfill (the
	// ledger's queued, which a sweep takes first). One word for both, in the
	// CLI, the console and the metrics (PartitionsDue, OldestDueAge) alike.
	Queued  Phase = "due"
	Failed  Phase = "failed"  // will retry after its backoff
	Stopped Phase = "stopped" // failed too often; waits for a retry (daybook retry)
)

// fromLedger maps the ledger's phase names (ledger.PhaseOf, the fleet
// summaries' counts) to the operators' words.
var fromLedger = map[string]Phase{
	ledger.PhaseCompleted: Completed,
	ledger.PhaseRunning:   Running,
	ledger.PhaseClaimed:   Claimed,
	ledger.PhaseRequested: Requested,
	ledger.PhaseQueued:    Queued,
	ledger.PhaseFailed:    Failed,
	ledger.PhaseStopped:   Stopped,
}

// OfLedger is the phase of a ledger phase name; a name the ledger does not
// have stays as it is.
func OfLedger(name string) Phase {
	if p, ok := fromLedger[name]; ok {
		return p
	}
	return Phase(name)
}

// aliases are the phase names of earlier releases, which --state (and a
// console filter) still takes, so an operator's scripts keep working:
// "claimed" (now in-queue), "queued" (now due), and the ledger's "pending".
var aliases = map[string]Phase{"claimed": Claimed, "queued": Queued, "pending": Queued}

// shown is how a phase is shown: a symbol for plain text, and a legend.
type shown struct {
	phase  Phase
	symbol byte
	legend string
}

// phases is every phase in display order, with how it is shown. The CLI's
// map, legend, --state and fleet columns and the console's heatmap, legend
// and fleet columns all follow it: a phase is added or renamed here (and
// given its colour: the CLI's phaseColor, the console's .p-<phase> style).
var phases = []shown{
	{Completed, '#', "completed"},
	{Running, '>', "running"},
	{Claimed, '~', "in the jobs queue, claimed by a sweep, waiting for an exporter"},
	{Requested, '+', "re-export requested, in the jobs queue"},
	{Queued, '.', "due, waiting for a sweep"},
	{Failed, 'x', "failed, will retry"},
	{Stopped, 'X', "stopped retrying"},
}

// Phases in display order.
var Phases = func() []Phase {
	out := make([]Phase, len(phases))
	for i, p := range phases {
		out[i] = p.phase
	}
	return out
}()

// info is phases by phase.
var info = func() map[Phase]shown {
	m := make(map[Phase]shown, len(phases))
	for _, p := range phases {
		m[p.phase] = p
	}
	return m
}()

// BlankLegend says what a day without a ledger row (a blank cell) means,
// in the CLI's legend and the console's alike.
const BlankLegend = "no ledger row: before the start date, or not scheduled by a sweep yet"

// Symbol is the phase's one-character mark in text views.
func (p Phase) Symbol() byte { return info[p].symbol }

// Legend says what the phase means, in a few words.
func (p Phase) Legend() string { return info[p].legend }

// Valid reports whether p is one of Phases.
func (p Phase) Valid() bool { _, ok := info[p]; return ok }

// Of is the phase of a ledger row (a full row, or one from the due index).
func Of(r ledger.Row) Phase { return OfLedger(ledger.PhaseOf(r)) }

// Names lists the phases, comma-separated, in display order.
func Names() string {
	names := make([]string, len(Phases))
	for i, p := range Phases {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// ParsePhases reads phase names, each value comma-separated or not, the
// names of earlier releases too (aliases); the error names the value
// refused and the valid ones.
func ParsePhases(vals []string) (map[Phase]bool, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	want := map[Phase]bool{}
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			p := Phase(strings.TrimSpace(s))
			if a, ok := aliases[string(p)]; ok {
				p = a
			}
			if !p.Valid() {
				return nil, fmt.Errorf("%q: unknown state; valid: %s", s, Names())
			}
			want[p] = true
		}
	}
	return want, nil
}

// CountsText sums counts per phase in display order: "completed 3, failed 1".
func CountsText(m map[Phase]int) string {
	var parts []string
	for _, p := range Phases {
		if m[p] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p, m[p]))
		}
	}
	if len(parts) == 0 {
		return "no partitions"
	}
	return strings.Join(parts, ", ")
}
