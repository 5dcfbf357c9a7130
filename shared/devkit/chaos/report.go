package chaos

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a run did and found.
type Report struct {
	Seed             uint64
	Duration         time.Duration
	Rounds           int
	Sweeps           int
	ConcurrentSweeps int // rounds that swept with both sweepers at once
	Invocations      int // exporter invocations
	Crashed          int // invocations that did not answer (killed)
	Duplicates       int // messages sent a second time
	Reexports        int // manual re-exports asked for
	LeasesEnded      int // dead claims whose lease was ended (ledger.ExpireClaim)
	Requeued         int // failed rows requeued
	DeadLettered     int // messages in the DLQ after the run
	// Forged is how many forged messages were delivered (forged.go), and
	// ForgedDeadLettered how many of them were found in the DLQ; Redriven
	// counts real messages found there without a reason (SQS moved them
	// after maxReceiveCount deliveries).
	Forged             int
	ForgedDeadLettered int
	Redriven           int
	Kills              int
	Faults             map[Kind]map[Step]int
	Requests           map[Step]int // store requests through the proxies
	// Stores are the requests and faults of each store (StoreS3, StoreGCS,
	// StoreAzure).
	Stores   map[string]StoreFaults
	Checked  Checked
	Accounts AccountRaces  // concurrent overlapping account creates and the prefix check
	Planted  PlantChecks   // planted _SUCCESS and _manifest.json pairs (plant_manifest.go)
	Iceberg  IcebergPlants // planted Iceberg metadata (plant_iceberg.go)
	Problems []string      // broken invariants
	// SelfTest is how many deliberate breaks the check reported after the
	// run (Options.SelfTest).
	SelfTest int
}

// Checked counts what the invariant check covered.
type Checked struct {
	Partitions  int   // completed partitions verified
	Sliced      int   // of them, committed in slices
	Files       int   // data files read back
	Rows        int64 // rows read back and matched to the source
	Generations int   // committed generations (distinct _SUCCESS) seen
	Commits     int   // _SUCCESS writes the store accepted
	Deliveries  int   // delivery manifests compared with the ledger
	AtRest      int   // manifests of days at rest compared after each round
	Buckets     int   // buckets checked for incomplete uploads
	Reclaimed   int   // expired claims seen reclaimed within two sweeps (reclaim.go)
	// Events counts the committed events recorded in the outbox, of which
	// EventsPending were not published yet; Changes the change-log entries.
	Events, EventsPending, Changes int
	// Table is the Iceberg table check (iceberg.go).
	Table TableChecks
}

// Print writes the report: the figures, the faults by kind and step, and
// the problems.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "chaos run, seed %d: %s, %d rounds, %d sweeps (%d rounds with 2 at once), %d exporter invocations (%d killed mid-run)\n",
		r.Seed, r.Duration.Round(time.Second), r.Rounds, r.Sweeps, r.ConcurrentSweeps, r.Invocations, r.Crashed)
	fmt.Fprintf(w, "  %d duplicate deliveries, %d re-exports asked, %d dead claims' leases ended, %d failed rows requeued, %d messages dead-lettered\n",
		r.Duplicates, r.Reexports, r.LeasesEnded, r.Requeued, r.DeadLettered)
	fmt.Fprintf(w, "  %d forged messages delivered, %d of them found dead-lettered with a reason (and %d real messages redriven there by SQS)\n",
		r.Forged, r.ForgedDeadLettered, r.Redriven)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "  fault\\step\t")
	for _, s := range Steps {
		fmt.Fprintf(tw, "%s\t", s)
	}
	fmt.Fprintln(tw, "total\t")
	total := 0
	row := func(name string, counts map[Step]int) {
		fmt.Fprintf(tw, "  %s\t", name)
		sum := 0
		for _, s := range Steps {
			fmt.Fprintf(tw, "%d\t", counts[s])
			sum += counts[s]
		}
		fmt.Fprintf(tw, "%d\t\n", sum)
		total += sum
	}
	for _, k := range Kinds {
		row(string(k), r.Faults[k])
	}
	t := total
	row("requests", r.Requests)
	tw.Flush()
	fmt.Fprintf(w, "  %d faults injected (%d kills) in %d store requests\n", t, r.Kills, total-t)
	r.printStores(w)
	c := r.Checked
	fmt.Fprintf(w, "  checked: %d partitions (%d in slices), %d files, %d rows matched to the source, %d generations in %d commits, %d delivery manifests (and %d after rounds), %d buckets without incomplete uploads, %d expired claims reclaimed within two sweeps\n",
		c.Partitions, c.Sliced, c.Files, c.Rows, c.Generations, c.Commits, c.Deliveries, c.AtRest, c.Buckets, c.Reclaimed)
	fmt.Fprintf(w, "  events: %d committed events recorded (%d still pending), %d change-log entries\n", c.Events, c.EventsPending, c.Changes)
	fmt.Fprintf(w, "  iceberg table: %d checks (after every round and at the end), %d days as their manifests list them, %d data files found, %d rows read back\n",
		c.Table.Checks, c.Table.Days, c.Table.Files, c.Table.Rows)
	a := r.Accounts
	fmt.Fprintf(w, "  accounts: %d race rounds, %d overlapping creates (%d committed, %d refused as overlapping), %d controls created; %d objects checked against %d accounts' prefixes\n",
		a.Rounds, a.Creates, a.Created, a.Refused, a.Controls, a.Objects, a.Accounts)
	pl := r.Planted
	fmt.Fprintf(w, "  planted commits: %d rounds, %d forged _SUCCESS + _manifest.json pairs, %d objects planted; %d objects outside the planting prefixes checked, %d changed; %d events and change-log entries checked, %d naming another partition or a planted generation; %d runs refused a marker of 2^63-1\n",
		pl.Rounds, pl.Plants, pl.Objects, pl.OutsideChecked, pl.OutsideChanged, pl.EventsChecked, pl.ForeignEvents, pl.RefusedAhead)
	r.Iceberg.print(w)
	if r.SelfTest > 0 {
		fmt.Fprintf(w, "  self-test: the check reported each of %d deliberate breaks made after the run\n", r.SelfTest)
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "  invariants: all hold")
		return
	}
	fmt.Fprintf(w, "  %d PROBLEMS:\n    %s\n", len(r.Problems), strings.Join(r.Problems, "\n    "))
}

// printStores writes the faults by store and kind, and each store's kills
// by step.
func (r *Report) printStores(w io.Writer) {
	stores := slices.Sorted(maps.Keys(r.Stores))
	if len(stores) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "  store\trequests\t")
	for _, k := range Kinds {
		fmt.Fprintf(tw, "%s\t", k)
	}
	fmt.Fprintln(tw, "faults\t")
	for _, name := range stores {
		s := r.Stores[name]
		reqs := 0
		for _, n := range s.Requests {
			reqs += n
		}
		fmt.Fprintf(tw, "  %s\t%d\t", name, reqs)
		sum := 0
		for _, k := range Kinds {
			n := 0
			for _, c := range s.Faults[k] {
				n += c
			}
			fmt.Fprintf(tw, "%d\t", n)
			sum += n
		}
		fmt.Fprintf(tw, "%d\t\n", sum)
	}
	tw.Flush()
	for _, name := range stores {
		s := r.Stores[name]
		var by []string
		for _, st := range Steps {
			if n := s.Faults[KindKillBefore][st] + s.Faults[KindKillAfter][st]; n > 0 {
				by = append(by, fmt.Sprintf("%s %d", st, n))
			}
		}
		fmt.Fprintf(w, "  %s kills by step: %s\n", name, cmp.Or(strings.Join(by, ", "), "none"))
	}
}
