package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// changeLog reads an account's change log: its entries by partition.
func (p *pipeline) changeLog(ctx context.Context, a account.Account, prefix string) (map[partition.Key][]events.Change, error) {
	out := map[partition.Key][]events.Change{}
	store := p.bucketNamed(a.Destination.Bucket)
	objs, err := store.List(ctx, layout.ChangesPrefix(prefix), 100_000)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		body, err := store.Get(ctx, o.Key, maxGet)
		if err != nil {
			return nil, err
		}
		var c events.Change
		if err := json.Unmarshal(body, &c); err != nil {
			p.problem("%s: change-log entry does not decode: %v", store.URI(o.Key), err)
			continue
		}
		day, err := civil.Parse(c.Day)
		if err != nil {
			p.problem("%s: day %q: %v", store.URI(o.Key), c.Day, err)
			continue
		}
		if want, err := c.Key(prefix); err != nil || want != o.Key {
			p.problem("%s: a change-log entry of %s generation %d belongs at %s", store.URI(o.Key), c.Day, c.Generation, want)
		}
		k := partition.Key{AccountID: a.ID, Dataset: c.Dataset, Day: day}
		out[k] = append(out[k], c)
	}
	return out, nil
}

// checkChanges: every generation committed into the partition (every
// distinct _SUCCESS the store accepted) has exactly one committed event
// recorded in the outbox, with its stable id, and exactly one change-log
// entry; nothing else has either. Events still pending are counted (the
// sweep publishes them), not a problem.
func (p *pipeline) checkChanges(ctx context.Context, k partition.Key, seq []Commit, entries []events.Change) error {
	evs, err := p.led.Outbox().Events(ctx, k)
	if err != nil {
		return err
	}
	for _, pr := range changeProblems(k, seq, evs, entries) {
		p.problem("%s", pr)
	}
	for _, ev := range evs {
		if ev.Kind == ledger.EventCommitted {
			p.rep.Checked.Events++
			if ev.Pending() {
				p.rep.Checked.EventsPending++
			}
		}
	}
	p.rep.Checked.Changes += len(entries)
	return nil
}

// changeProblems compares a partition's committed generations with its
// recorded committed events and change-log entries.
func changeProblems(k partition.Key, seq []Commit, evs []ledger.Event, entries []events.Change) []string {
	var out []string
	committed := map[int64]bool{}
	for _, c := range seq {
		committed[c.Generation] = true
	}
	recorded, logged := map[int64]int{}, map[int64]int{}
	for _, ev := range evs {
		if ev.Kind != ledger.EventCommitted {
			continue
		}
		recorded[ev.Generation]++
		if id := events.CommittedID(k.AccountID, k.Dataset, k.Day.String(), ev.Generation); ev.ID != id {
			out = append(out, fmt.Sprintf("%s: the event of generation %d has id %q, want %q", k, ev.Generation, ev.ID, id))
		}
	}
	for _, c := range entries {
		logged[c.Generation]++
	}
	gens := map[int64]bool{}
	for _, m := range []map[int64]int{recorded, logged} {
		for g := range m {
			gens[g] = true
		}
	}
	for g := range committed {
		gens[g] = true
	}
	for _, g := range slices.Sorted(maps.Keys(gens)) {
		switch {
		case !committed[g]:
			out = append(out, fmt.Sprintf("%s: generation %d was never committed, yet has %d events and %d change-log entries", k, g, recorded[g], logged[g]))
			continue
		case recorded[g] != 1:
			out = append(out, fmt.Sprintf("%s: generation %d committed, %d events recorded, want 1", k, g, recorded[g]))
		}
		if logged[g] != 1 {
			out = append(out, fmt.Sprintf("%s: generation %d committed, %d change-log entries, want 1", k, g, logged[g]))
		}
	}
	return out
}
