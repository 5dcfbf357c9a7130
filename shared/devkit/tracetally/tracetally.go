// Package tracetally sums up a Go execution trace (runtime/trace; the
// export benchmark writes one per child with DAYBOOK_BENCH_TRACE): how
// long the goroutines started by each function ran, how long the process
// had no goroutine, one, two... running at once, and where each group
// waited longest. That is what a CPU profile cannot say: who waited for
// whom while a CPU stood idle. It is development tooling (daybook-dev
// trace), linked by no function.
package tracetally

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// Tally is what Read found in one trace.
type Tally struct {
	Span time.Duration // from the first event to the last
	// Groups are the goroutines by the function they were started with
	// (for one already running when the trace began, the outermost frame
	// of its first stack; "?" without one), the longest running first.
	Groups []Group
	// Running[n] is how long exactly n goroutines were running at once.
	Running []time.Duration
}

// Group is the goroutines started with one function.
type Group struct {
	Start      string
	Goroutines int
	Ran        time.Duration
	Waits      []Wait // the longest first
}

// Wait is the time a group's goroutines spent blocked for one reason at
// one place: the innermost frame outside the runtime and sync packages.
type Wait struct {
	Reason string
	Where  string
	Count  int
	Total  time.Duration
}

// goroutine is Read's state for one goroutine.
type goroutine struct {
	name     string // its start function, or "" until a stack names it
	ran      time.Duration
	waits    map[waitKey]*Wait
	running  trace.Time // when it started running, if it is
	isRun    bool
	waitFrom trace.Time
	waitKey  waitKey
	waiting  bool
}

type waitKey struct{ reason, where string }

// Read tallies the trace r holds.
func Read(r io.Reader) (Tally, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return Tally{}, fmt.Errorf("trace: %w", err)
	}
	t := tallier{gs: map[trace.GoID]*goroutine{}}
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Tally{}, fmt.Errorf("trace: event: %w", err)
		}
		t.event(ev)
	}
	return t.result(), nil
}

// tallier folds the events into the tally.
type tallier struct {
	first, last trace.Time
	seen        bool
	gs          map[trace.GoID]*goroutine
	running     int
	since       trace.Time // when running last changed
	levels      []time.Duration
}

func (t *tallier) event(ev trace.Event) {
	now := ev.Time()
	if !t.seen {
		t.first, t.since, t.seen = now, now, true
	}
	t.last = now
	if ev.Kind() != trace.EventStateTransition {
		return
	}
	st := ev.StateTransition()
	if st.Resource.Kind != trace.ResourceGoroutine {
		return
	}
	from, to := st.Goroutine()
	id := st.Resource.Goroutine()
	g := t.goroutine(id, from, st.Stack)
	if g.name == "" && ev.Goroutine() == id {
		g.name = outermost(ev.Stack()) // one running when the trace began
	}
	if from == trace.GoRunning && g.isRun {
		g.ran += now.Sub(g.running)
		g.isRun = false
		t.setRunning(now, t.running-1)
	}
	if g.waiting && to != trace.GoWaiting {
		w := g.waits[g.waitKey]
		if w == nil {
			w = &Wait{Reason: g.waitKey.reason, Where: g.waitKey.where}
			g.waits[g.waitKey] = w
		}
		w.Count++
		w.Total += now.Sub(g.waitFrom)
		g.waiting = false
	}
	switch to {
	case trace.GoRunning:
		g.running, g.isRun = now, true
		t.setRunning(now, t.running+1)
	case trace.GoWaiting:
		g.waitFrom, g.waiting = now, true
		g.waitKey = waitKey{reason: st.Reason, where: where(st.Stack, ev.Stack())}
	}
}

// goroutine returns id's state, named by its start function when the
// trace saw it created.
func (t *tallier) goroutine(id trace.GoID, from trace.GoState, start trace.Stack) *goroutine {
	if g, ok := t.gs[id]; ok {
		return g
	}
	g := &goroutine{waits: map[waitKey]*Wait{}}
	if from == trace.GoNotExist {
		for f := range start.Frames() {
			g.name = f.Func
			break
		}
	}
	t.gs[id] = g
	return g
}

func (t *tallier) setRunning(now trace.Time, n int) {
	for len(t.levels) <= t.running {
		t.levels = append(t.levels, 0)
	}
	t.levels[t.running] += now.Sub(t.since)
	t.running, t.since = max(n, 0), now
}

// result groups the goroutines by name.
func (t *tallier) result() Tally {
	t.setRunning(t.last, t.running)
	groups := map[string]*Group{}
	waits := map[string]map[waitKey]*Wait{}
	for _, g := range t.gs {
		if g.isRun {
			g.ran += t.last.Sub(g.running)
		}
		name := cmp.Or(g.name, "?")
		grp := groups[name]
		if grp == nil {
			grp = &Group{Start: name}
			groups[name], waits[name] = grp, map[waitKey]*Wait{}
		}
		grp.Goroutines++
		grp.Ran += g.ran
		for k, w := range g.waits {
			if sum := waits[name][k]; sum != nil {
				sum.Count, sum.Total = sum.Count+w.Count, sum.Total+w.Total
			} else {
				c := *w
				waits[name][k] = &c
			}
		}
	}
	out := Tally{Span: t.last.Sub(t.first), Running: t.levels}
	for name, grp := range groups {
		for _, w := range waits[name] {
			grp.Waits = append(grp.Waits, *w)
		}
		slices.SortFunc(grp.Waits, func(a, b Wait) int {
			return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Where, b.Where), cmp.Compare(a.Reason, b.Reason))
		})
		out.Groups = append(out.Groups, *grp)
	}
	slices.SortFunc(out.Groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Ran, a.Ran), cmp.Compare(a.Start, b.Start))
	})
	return out
}

// outermost is the function at the bottom of s: what a goroutine that
// was running when the trace began was started with, as far as its stack
// shows; "" without a stack.
func outermost(s trace.Stack) string {
	name := ""
	for f := range s.Frames() {
		name = f.Func
	}
	return name
}

// where is the innermost frame of the stacks outside the runtime's own
// packages and sync: where the code chose to wait.
func where(stacks ...trace.Stack) string {
	for _, s := range stacks {
		for f := range s.Frames() {
			if !runtimeFrame(f.Func) {
				return f.Func
			}
		}
	}
	return "?"
}

func runtimeFrame(fn string) bool {
	for _, p := range []string{"runtime.", "runtime/", "sync.", "internal/", "syscall."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// Write prints t as plain text: the span, the time at each level of
// running goroutines, and the top groups with their top waits.
func (t Tally) Write(w io.Writer, groups, waits int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "span %s\n", t.Span.Round(time.Microsecond))
	for n, d := range t.Running {
		fmt.Fprintf(&b, "%d running: %s\n", n, d.Round(time.Microsecond))
	}
	for _, g := range t.Groups[:min(groups, len(t.Groups))] {
		fmt.Fprintf(&b, "%s (%d goroutines): ran %s\n", g.Start, g.Goroutines, g.Ran.Round(time.Microsecond))
		for _, wt := range g.Waits[:min(waits, len(g.Waits))] {
			fmt.Fprintf(&b, "    waited %s in %d waits: %s at %s\n", wt.Total.Round(time.Microsecond), wt.Count, wt.Reason, wt.Where)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
