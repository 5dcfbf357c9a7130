package chaos

// Planted commits. The customer's bucket is untrusted input: anyone who can
// write to it can plant a _SUCCESS and a _manifest.json that commits
// whatever they like. In every round in which the driver still works
// (kills short, and the first three rounds; the first has nothing
// completed yet), before the drain, plantCommits plants such pairs in
// completed partitions, one of each kind, and asks for the partition's
// re-export, so the round's runs meet them:
//   - a manifest naming another account of the run, listing a decoy that
//     looks like that account's data file (in the planting account's
//     bucket, under the other account's prefix path);
//   - a manifest of the generation 2^63-1 (the marker commits the next
//     claim's generation, as a run that died before Complete leaves it);
//   - a manifest listing keys outside the partition: a decoy outside every
//     prefix, and a key climbing out of the partition with "..";
//   - a marker of the generation 2^63-1, which no run may number above or
//     remove: the run fails, the marker stays, and the driver, as the
//     operator the error tells to, deletes it after the round.
//
// After the drain, checkPlants holds the round to:
//   - no object of the planting account's bucket outside its prefix (the
//     decoys among them) changed, was deleted or was written at a key a
//     planted manifest names;
//   - no committed event (outbox, which is what is published to
//     EventBridge) and no change-log entry of the planted partitions or of
//     the partitions the planted manifests name names another account,
//     dataset or day than its partition's, or a generation the store never
//     accepted a _SUCCESS of through the exporters (a planted one);
//   - the marker of 2^63-1 was left as it was, and the run refused it.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// plantedRoot is where the decoys outside every account's prefix live.
const plantedRoot = "chaos-planted/"

// PlantChecks counts the planted commits and what the checks found.
type PlantChecks struct {
	Rounds  int // rounds that planted
	Plants  int // planted _SUCCESS + _manifest.json pairs
	Objects int // objects planted (markers, manifests, decoys)
	// OutsideChecked counts the objects outside the planting accounts'
	// prefixes compared after the rounds; OutsideChanged those changed,
	// deleted or written (must be 0).
	OutsideChecked, OutsideChanged int
	// EventsChecked counts the committed events and change-log entries
	// checked; ForeignEvents those naming another partition than theirs,
	// or a planted generation (must be 0).
	EventsChecked, ForeignEvents int
	// RefusedAhead counts the runs seen refusing the marker of 2^63-1 and
	// leaving it.
	RefusedAhead int
}

// plant is one planted pair.
type plant struct {
	what   string
	key    partition.Key
	acct   account.Account
	pp     string // the partition's key prefix
	named  []partition.Key
	marker string // the planted _SUCCESS's ETag
	ahead  bool   // the marker is of 2^63-1: it must be refused and left
}

// planted is one round's plants and the objects outside their accounts'
// prefixes as they were.
type planted struct {
	plants  []plant
	outside map[string]string // bucket/key -> ETag and time
	named   map[string]bool   // bucket/key the planted manifests name outside the prefix
}

// plantCommits plants the round's pairs (see the file comment) and sends
// their partitions' re-exports; nil when the round plants none.
func (p *pipeline) plantCommits(ctx context.Context, round int) (*planted, error) {
	if p.faults.Kills() >= p.o.Kills && round > 3 {
		return nil, nil
	}
	rows, err := p.rows(ctx)
	if err != nil {
		return nil, err
	}
	var done []ledger.Row
	for _, r := range rows {
		if r.State == ledger.StateCompleted && r.ManifestKey != "" && (p.big == nil || r.Key != *p.big) {
			done = append(done, r)
		}
	}
	pr := &planted{outside: map[string]string{}, named: map[string]bool{}}
	kinds := []string{"a manifest naming another account", "a manifest of generation 2^63-1", "a manifest listing keys outside the partition", "a marker of generation 2^63-1"}
	used := map[partition.Key]bool{}
	for _, what := range kinds {
		if len(done) == 0 {
			break
		}
		i := p.rng.IntN(len(done))
		r := done[i]
		done = append(done[:i], done[i+1:]...)
		if used[r.Key] {
			continue
		}
		used[r.Key] = true
		pl, err := p.plantOne(ctx, pr, r, what)
		if err != nil {
			return nil, err
		}
		pr.plants = append(pr.plants, pl)
	}
	if len(pr.plants) == 0 {
		return nil, nil
	}
	// What lies outside the planting accounts' prefixes now, decoys
	// included: nothing may change it.
	seen := map[string]bool{}
	for _, pl := range pr.plants {
		if seen[pl.acct.ID] {
			continue
		}
		seen[pl.acct.ID] = true
		if err := p.outsideObjects(ctx, pl.acct, pr.outside); err != nil {
			return nil, err
		}
	}
	for _, pl := range pr.plants {
		body, err := jobs.Encode(jobs.Manual{Kind: jobs.KindManual, AccountID: pl.key.AccountID, Dataset: pl.key.Dataset, Day: pl.key.Day.String(), RequestedBy: "chaos-plant"})
		if err != nil {
			return nil, err
		}
		if err := p.send(ctx, body); err != nil {
			return nil, err
		}
	}
	p.rep.Planted.Rounds++
	p.rep.Planted.Plants += len(pr.plants)
	p.logf("round %d: planted %d forged commits", round, len(pr.plants))
	return pr, nil
}

// plantOne plants one pair of kind what in row r's partition.
func (p *pipeline) plantOne(ctx context.Context, pr *planted, r ledger.Row, what string) (plant, error) {
	a := p.account(r.AccountID)
	prefix, err := a.Prefix(p.stage)
	if err != nil {
		return plant{}, err
	}
	bucket := a.Destination.Bucket
	pp := layout.PartitionPrefix(prefix, r.Dataset, r.Day)
	body, err := p.get(ctx, bucket, pp+layout.ManifestName)
	if err != nil {
		return plant{}, fmt.Errorf("plant in %s: read the manifest: %w", pp, err)
	}
	m, err := manifest.Decode(body)
	if err != nil || len(m.Files) == 0 {
		return plant{}, fmt.Errorf("plant in %s: the committed manifest: %v (%d files)", pp, err, len(m.Files))
	}
	ext := path.Ext(m.Files[0].Key)
	if strings.HasSuffix(m.Files[0].Key, ".ndjson.gz") {
		ext = ".ndjson.gz"
	}
	data, err := p.get(ctx, bucket, m.Files[0].Key)
	if err != nil {
		return plant{}, err
	}
	decoy := func(key string) (string, error) {
		pr.named[bucket+"/"+key] = true
		if _, err := p.bucketNamed(bucket).Head(ctx, key); err == nil {
			return key, nil
		}
		p.rep.Planted.Objects++
		return key, p.put(ctx, bucket, key, data)
	}
	pl := plant{what: what, key: r.Key, acct: a, pp: pp}
	next := max(r.Generation, r.GenReserved) + 1 // what a run that died before Complete leaves
	gen := next
	m.Generation, m.RunID = next, "run_planted"
	switch what {
	case "a manifest naming another account":
		other := p.accounts[(p.accountIndex(a.ID)+1)%len(p.accounts)]
		oprefix, err := other.Prefix(p.stage)
		if err != nil {
			return plant{}, err
		}
		key, err := decoy(layout.DataKey(oprefix, r.Dataset, r.Day, 0, ext))
		if err != nil {
			return plant{}, err
		}
		m.AccountID = other.ID
		m.Files[0].Key = key
		pl.named = append(pl.named, partition.Key{AccountID: other.ID, Dataset: r.Dataset, Day: r.Day})
	case "a manifest of generation 2^63-1":
		m.Generation = math.MaxInt64
	case "a manifest listing keys outside the partition":
		out, err := decoy(plantedRoot + "part-00000" + ext)
		if err != nil {
			return plant{}, err
		}
		climb := pp + strings.Repeat("../", strings.Count(pp, "/")) + plantedRoot + "part-00001" + ext
		if _, err := decoy(path.Clean(climb)); err != nil {
			return plant{}, err
		}
		m.Files = append(m.Files, manifest.File{Key: out, Rows: 1, Bytes: int64(len(data))}, manifest.File{Key: climb, Rows: 1, Bytes: int64(len(data))})
	case "a marker of generation 2^63-1":
		gen, m.Generation, pl.ahead = math.MaxInt64, math.MaxInt64, true
	}
	m.Sum()
	mb, err := m.Encode()
	if err != nil {
		return plant{}, err
	}
	if err := p.put(ctx, bucket, pp+layout.ManifestName, mb); err != nil {
		return plant{}, err
	}
	if err := p.put(ctx, bucket, pp+layout.SuccessName, manifest.NewSuccess(gen, "run_planted", pp+layout.ManifestName, mb, time.Now()).Encode()); err != nil {
		return plant{}, err
	}
	if pl.marker, err = p.fingerprint(ctx, bucket, pp+layout.SuccessName); err != nil {
		return plant{}, err
	}
	p.rep.Planted.Objects += 2
	return pl, nil
}

func (p *pipeline) accountIndex(id string) int {
	for i, a := range p.accounts {
		if a.ID == id {
			return i
		}
	}
	return 0
}

func (p *pipeline) put(ctx context.Context, bucket, key string, body []byte) error {
	if err := p.bucketNamed(bucket).Put(ctx, key, body, "application/octet-stream"); err != nil {
		return fmt.Errorf("plant: %w", err)
	}
	return nil
}

// outsideObjects adds every object of a's bucket outside a's prefix to
// into, by ETag and time.
func (p *pipeline) outsideObjects(ctx context.Context, a account.Account, into map[string]string) error {
	prefix, err := a.Prefix(p.stage)
	if err != nil {
		return err
	}
	bucket := a.Destination.Bucket
	objs, err := p.objects(ctx, bucket, func(k string) bool { return !layout.Within(k, prefix) })
	if err != nil {
		return err
	}
	for k, v := range objs {
		into[bucket+"/"+k] = v
	}
	return nil
}

// checkPlants checks the round's plants once the queue drained (see the
// file comment), and deletes a marker of 2^63-1 the run left, as the
// operator its error names it to.
func (p *pipeline) checkPlants(ctx context.Context, round int, pr *planted) error {
	if pr == nil {
		return nil
	}
	c := &p.rep.Planted
	now := map[string]string{}
	seen := map[string]bool{}
	for _, pl := range pr.plants {
		if !seen[pl.acct.ID] {
			seen[pl.acct.ID] = true
			if err := p.outsideObjects(ctx, pl.acct, now); err != nil {
				return err
			}
		}
	}
	for k, v := range pr.outside {
		c.OutsideChecked++
		switch got, ok := now[k]; {
		case !ok:
			c.OutsideChanged++
			p.problem("round %d: %s, outside the planting account's prefix, was deleted", round, p.uriOf(k))
		case got != v:
			c.OutsideChanged++
			p.problem("round %d: %s, outside the planting account's prefix, was rewritten", round, p.uriOf(k))
		}
	}
	for k := range now {
		if _, ok := pr.outside[k]; !ok && pr.named[k] {
			c.OutsideChanged++
			p.problem("round %d: %s, named by a planted manifest outside the partition, was written", round, p.uriOf(k))
		}
	}
	commits := map[string]map[int64]bool{}
	for _, cm := range p.faults.Commits() {
		if commits[cm.Partition] == nil {
			commits[cm.Partition] = map[int64]bool{}
		}
		commits[cm.Partition][cm.Generation] = true
	}
	for _, pl := range pr.plants {
		for _, k := range append([]partition.Key{pl.key}, pl.named...) {
			if err := p.checkPlantedEvents(ctx, round, pl, k, commits); err != nil {
				return err
			}
		}
		if pl.ahead {
			if err := p.checkAhead(ctx, round, pl); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPlantedEvents holds partition k's committed events and change-log
// entries to k and to the generations the exporters committed there.
func (p *pipeline) checkPlantedEvents(ctx context.Context, round int, pl plant, k partition.Key, commits map[string]map[int64]bool) error {
	a := p.account(k.AccountID)
	prefix, err := a.Prefix(p.stage)
	if err != nil {
		return err
	}
	pp := layout.PartitionPrefix(prefix, k.Dataset, k.Day)
	name, _ := dataset.SplitLedgerName(k.Dataset)
	c := &p.rep.Planted
	foreign := func(format string, args ...any) {
		c.ForeignEvents++
		p.problem("round %d, %s planted in %s: "+format, append([]any{round, pl.what, pl.key}, args...)...)
	}
	evs, err := p.led.Outbox().Events(ctx, k)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.Kind != ledger.EventCommitted {
			continue
		}
		c.EventsChecked++
		var d events.Committed
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			foreign("the event %s of %s does not decode: %v", ev.ID, k, err)
			continue
		}
		if d.Account != k.AccountID || d.Dataset != name || d.Day != k.Day.String() || d.Generation != ev.Generation || !commits[pp][ev.Generation] {
			foreign("the event %s recorded under %s names account %s, dataset %s, day %s, generation %d (committed there: %v)",
				ev.ID, k, d.Account, d.Dataset, d.Day, d.Generation, commits[pp][ev.Generation])
		}
	}
	log, err := p.changeLog(ctx, a, prefix)
	if err != nil {
		return err
	}
	for _, e := range log[partition.Key{AccountID: k.AccountID, Dataset: name, Day: k.Day}] {
		c.EventsChecked++
		if e.ID != events.CommittedID(k.AccountID, name, k.Day.String(), e.Generation) || !commits[pp][e.Generation] {
			foreign("the change-log entry %s of %s, generation %d (committed there: %v)", e.ID, k, e.Generation, commits[pp][e.Generation])
		}
	}
	return nil
}

// checkAhead checks a marker of 2^63-1 was left as planted and its
// partition's generation was not taken from it, then deletes it.
func (p *pipeline) checkAhead(ctx context.Context, round int, pl plant) error {
	bucket, key := pl.acct.Destination.Bucket, pl.pp+layout.SuccessName
	now, err := p.fingerprint(ctx, bucket, key)
	switch {
	case err != nil:
		p.problem("round %d: the marker of 2^63-1 planted in %s is gone (%v): a run removed it", round, pl.key, err)
	case now != pl.marker:
		p.problem("round %d: the marker of 2^63-1 planted in %s was replaced: a run numbered a generation above it", round, pl.key)
	default:
		if err := p.bucketNamed(bucket).Delete(ctx, key); err != nil {
			return err
		}
	}
	r, err := p.led.Partitions().Get(ctx, pl.key)
	if err != nil {
		return err
	}
	switch {
	case r.Generation > ledger.MaxGeneration || r.GenReserved > ledger.MaxGeneration:
		p.problem("round %d: %s took its generation from the marker of 2^63-1: generation %d, reserved %d", round, pl.key, r.Generation, r.GenReserved)
	case r.State == ledger.StateFailed && strings.Contains(r.LastError, ledger.ErrBucketAhead.Error()):
		p.rep.Planted.RefusedAhead++
	}
	return nil
}
