package chaos

// Planted Iceberg metadata. Every round, once the round has drained and its
// checks have run, the driver plants hostile metadata in each table of the
// account that keeps one, as anyone who can write to its bucket could: the
// next metadata version with one trick, the tricks taken in turn (a
// metadata log of other objects with delete-after-commit, an expired
// snapshot whose manifest list is another object, write.metadata.path or
// the location elsewhere, a dot-dot manifest list, an empty file, an Avro
// decompression bomb as the current manifest list, retry and delete
// properties on the table's own log). The objects the tricks name are canaries: objects no exporter
// writes, outside the account's prefix in its own bucket (another
// account's place in a shared bucket) and in another account's bucket.
// It then asks for a re-export of a day of each planted dataset and drains
// the queue through the exporters (faults and all), and checks:
//   - no object outside the planting account's prefix changed, in its own
//     bucket (every object there) and in the other bucket (the canaries);
//   - the table reads, with daybook's properties, or it is broken and
//     every partition of the dataset delivered meanwhile is completed with
//     its table error (the files flowed, the table waits for its repair);
//     no delivery failed on the table.
//
// It then repairs a broken table as `daybook table repair --yes` does
// (icetable.Table.Rebuild from the manifests of the days whose ledger
// generation is committed in the bucket, whatever their state; the table
// errors of those generations cleared, and of those no longer committed),
// checks that no row of the dataset keeps a table error, so the next
// round's table check holds as before.

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// IcebergPlants counts the planted metadata and what came of it.
type IcebergPlants struct {
	Rounds  int            // rounds that planted
	Objects int            // objects planted: metadata files, manifest lists, canaries
	Tricks  map[string]int // plants by trick
	// Broken counts plants the exporters took as a broken table (the
	// committed recorded its table error), Readable those whose delivery
	// committed with daybook's properties in place of the planted ones.
	Broken, Readable int
	// Delivered counts partitions completed while a plant was in place.
	Delivered int
	// Outside counts objects outside the planting account's prefix that
	// changed while a plant was in place: must be 0.
	Outside  int
	Checked  int // objects outside the planting prefix compared
	Repaired int // broken tables rebuilt afterwards
}

// plantCanary is the prefix of the canaries: no account's prefix.
const plantCanary = "chaos-canary"

// plantTrick edits the table's current metadata (m); c names the
// canaries and the extra file the trick planted, if any.
type plantTrick struct {
	name string
	edit func(m map[string]any, c canaries)
	// bomb: the trick's current manifest list is an Avro bomb.
	bomb bool
	// empty: the planted metadata file is empty.
	empty bool
}

// canaries are the URIs of the objects a trick names.
type canaries struct {
	base     string   // the planting account's bucket's URI (s3://bucket/, gs://bucket/, ...)
	location string   // a table location outside the account's prefix
	uris     []string // objects outside the account's prefix
	bomb     string   // the bomb's URI, when the trick has one
}

var plantTricks = []plantTrick{
	{name: "metadata log of other objects, deleted after commit", edit: func(m map[string]any, c canaries) {
		props := m["properties"].(map[string]any)
		props["write.metadata.delete-after-commit.enabled"], props["write.metadata.previous-versions-max"] = "true", "1"
		var log []any
		for _, u := range c.uris {
			log = append(log, map[string]any{"timestamp-ms": 1000, "metadata-file": u})
		}
		m["metadata-log"] = log
	}},
	{name: "expired snapshots whose manifest lists are other objects", edit: func(m map[string]any, c canaries) {
		snaps, _ := m["snapshots"].([]any)
		for i, u := range c.uris {
			snaps = append(snaps, map[string]any{"snapshot-id": 4200 + i, "timestamp-ms": 1000 + i, "sequence-number": 0,
				"manifest-list": u, "summary": map[string]any{"operation": "append"}, "schema-id": 0})
		}
		m["snapshots"] = snaps
	}},
	{name: "write.metadata.path elsewhere", edit: func(m map[string]any, c canaries) {
		m["properties"].(map[string]any)["write.metadata.path"] = c.base + c.location + "/metadata"
	}},
	{name: "location elsewhere", edit: func(m map[string]any, c canaries) {
		m["location"] = c.base + c.location
	}},
	{name: "a dot-dot manifest list", edit: func(m map[string]any, c canaries) {
		setCurrentList(m, strings.TrimSuffix(m["location"].(string), "/")+"/metadata/../../../../"+plantCanary+"/x.avro")
	}},
	{name: "an empty metadata file", empty: true},
	{name: "an Avro decompression bomb as the current manifest list", bomb: true, edit: func(m map[string]any, c canaries) {
		setCurrentList(m, c.bomb)
	}},
	{name: "its own log deleted after commit, retried and expired at will", edit: func(m map[string]any, _ canaries) {
		props := m["properties"].(map[string]any)
		props["write.metadata.delete-after-commit.enabled"], props["write.metadata.previous-versions-max"] = "true", "1"
		props["commit.retry.num-retries"], props["commit.retry.min-wait-ms"] = "1000", "1"
		props["history.expire.max-ref-age-ms"], props["commit.manifest-merge.enabled"] = "1", "false"
	}},
}

// setCurrentList points the current snapshot's manifest list at list; a
// table with no current snapshot (every day withdrawn, or none delivered
// yet) is given one.
func setCurrentList(m map[string]any, list string) {
	snaps, _ := m["snapshots"].([]any)
	for _, s := range snaps {
		if s, ok := s.(map[string]any); ok && m["current-snapshot-id"] != nil && fmt.Sprint(s["snapshot-id"]) == fmt.Sprint(m["current-snapshot-id"]) {
			s["manifest-list"] = list
			return
		}
	}
	const id = 4100
	m["snapshots"] = append(snaps, map[string]any{"snapshot-id": id, "timestamp-ms": 1000, "sequence-number": 0,
		"manifest-list": list, "summary": map[string]any{"operation": "append"}, "schema-id": 0})
	m["current-snapshot-id"] = id
}

// icePlant is one trick planted in one dataset's table, and the day
// re-exported through it.
type icePlant struct {
	trick   plantTrick
	ds, loc string
	key     string     // the planted metadata file
	day     ledger.Row // the day re-exported, as it was
}

// plantIceberg plants a trick in each table of one account that keeps
// them (the accounts, on each store, and the tricks taken in turn, round
// after round), re-exports a day of each through the exporters, checks,
// and repairs.
func (p *pipeline) plantIceberg(ctx context.Context, round int) error {
	var tables []account.Account
	for _, x := range p.accounts {
		if x.Destination.TableFormat == account.TableFormatIceberg {
			tables = append(tables, x)
		}
	}
	if len(tables) == 0 {
		return nil
	}
	a := tables[(round-1)%len(tables)]
	pl := &p.rep.Iceberg
	if pl.Tricks == nil {
		pl.Tricks = map[string]int{}
	}
	rng := rand.New(rand.NewPCG(p.o.Seed, uint64(round)^0x1ceb))
	prefix, err := a.Prefix(p.stage)
	if err != nil {
		return err
	}
	bkt := a.Destination.Bucket
	store := p.bucketNamed(bkt)
	rows, err := p.rows(ctx)
	if err != nil {
		return err
	}

	// The canaries: another account's place in the same bucket, and an
	// object in another account's bucket.
	c := canaries{base: store.URI(""), location: fmt.Sprintf("%s/r%d/v1/events", plantCanary, round)}
	for _, k := range []string{c.location + "/dt=2026-01-01/_SUCCESS", c.location + "/dt=2026-01-01/part-00000.parquet", c.location + "/metadata/v1.metadata.json"} {
		if err := p.putObject(ctx, bkt, k, []byte("canary "+k)); err != nil {
			return err
		}
		c.uris = append(c.uris, store.URI(k))
	}
	var otherBucket string
	for _, x := range p.accounts {
		if x.Destination.Bucket != bkt {
			otherBucket = x.Destination.Bucket
			break
		}
	}
	var elsewhere []string
	if otherBucket != "" {
		k := fmt.Sprintf("%s/r%d/_SUCCESS", plantCanary, round)
		if err := p.putObject(ctx, otherBucket, k, []byte("canary")); err != nil {
			return err
		}
		elsewhere = append(elsewhere, k)
		c.uris = append(c.uris, p.bucketNamed(otherBucket).URI(k))
	}
	pl.Objects += len(c.uris)

	var plants []icePlant
	for i, ds := range a.Datasets {
		loc := tableLocation(prefix, ds)
		var days []ledger.Row
		for _, r := range rows {
			if r.AccountID == a.ID && r.Dataset == ds && r.State == ledger.StateCompleted && (p.big == nil || r.Key != *p.big) {
				days = append(days, r)
			}
		}
		n, err := p.tableVersion(ctx, bkt, loc)
		if err != nil {
			return err
		}
		if n == 0 || len(days) == 0 {
			continue // no table yet, or nothing to re-export
		}
		tr := plantTricks[((round-1)*len(a.Datasets)+i)%len(plantTricks)]
		tc := c
		if tr.bomb {
			key := fmt.Sprintf("%s/%s/snap-1-0-bomb-r%d.avro", loc, icetable.MetadataDir, round)
			if err := p.putObject(ctx, bkt, key, avroBomb(12, 16<<20)); err != nil {
				return err
			}
			tc.bomb = store.URI(key)
			pl.Objects++
		}
		key, err := p.plantMetadata(ctx, bkt, loc, n, tr, tc)
		if err != nil {
			return err
		}
		pl.Objects++
		pl.Tricks[tr.name]++
		plants = append(plants, icePlant{trick: tr, ds: ds, loc: loc, key: key, day: days[rng.IntN(len(days))]})
	}
	if len(plants) == 0 {
		return nil
	}
	pl.Rounds++
	before, err := p.outside(ctx, bkt, prefix, otherBucket, elsewhere)
	if err != nil {
		return err
	}

	// A day of each planted table, exported again through the plant until
	// it is delivered (a fault may fail or kill a run; its day is asked
	// for again), so the round leaves nothing open.
	if err := p.throughPlants(ctx, plants, a.ID); err != nil {
		return err
	}

	after, err := p.outside(ctx, bkt, prefix, otherBucket, elsewhere)
	if err != nil {
		return err
	}
	pl.Checked += len(before)
	for _, d := range (world{objects: before}).diff(world{objects: after}) {
		pl.Outside++
		p.problem("round %d: planted Iceberg metadata in %s: an object outside the account's prefix changed: %s", round, store.URI(prefix), d)
	}
	if rows, err = p.rows(ctx); err != nil {
		return err
	}
	for _, pt := range plants {
		// The table as the exporter reads it: its metadata, then its
		// current snapshot's manifest list and manifests.
		tbl, lerr := icetable.Load(ctx, store, pt.loc)
		if lerr == nil {
			_, lerr = icetable.LiveFiles(ctx, tbl)
		}
		broken := errors.Is(lerr, icetable.ErrBroken)
		if lerr != nil && !broken {
			return fmt.Errorf("round %d: read the planted table %s: %w", round, store.URI(pt.loc), lerr)
		}
		for _, r := range rows {
			if r.AccountID != a.ID || r.Dataset != pt.ds {
				continue
			}
			delivered := r.Day == pt.day.Day && r.State == ledger.StateCompleted && r.Generation > pt.day.Generation
			if delivered {
				pl.Delivered++
			}
			switch {
			case r.State == ledger.StateFailed && strings.Contains(r.LastError, "Iceberg table") && !storeFault(r.LastError) &&
				(strings.Contains(r.LastError, "icetable: ") || strings.Contains(r.LastError, "parse table metadata")):
				// A failure of the table's content: it must have been a table
				// error of a delivered day (a failure of the store is retried;
				// icetable wraps those too).
				p.problem("round %d: planted Iceberg metadata (%s): %s failed on the table: %s", round, pt.trick.name, r.Key, r.LastError)
			case r.TableError != "" && !broken:
				p.problem("round %d: planted Iceberg metadata (%s): %s records a table error, and the table reads: %s", round, pt.trick.name, r.Key, r.TableError)
			case broken && delivered && !strings.HasPrefix(r.TableError, "table_broken: "):
				p.problem("round %d: planted Iceberg metadata (%s): %s was delivered to the broken table without its table error", round, pt.trick.name, r.Key)
			}
		}
		outcome := "reads with daybook's properties"
		if broken {
			pl.Broken++
			if err := p.repairTable(ctx, round, a, pt.ds, store, pt.loc); err != nil {
				return fmt.Errorf("round %d: repair the planted table %s: %w", round, store.URI(pt.loc), err)
			}
			pl.Repaired++
			outcome = "was recorded broken and repaired"
		} else {
			pl.Readable++
		}
		p.logf("round %d: planted Iceberg metadata (%s) at %s: the table %s", round, pt.trick.name, store.URI(pt.key), outcome)
	}
	p.logf("round %d: %d objects outside the planting prefix unchanged", round, len(before))
	return nil
}

// throughPlants re-exports each plant's day and drains the queue, again
// for the days not delivered, a few times at most.
func (p *pipeline) throughPlants(ctx context.Context, plants []icePlant, accountID string) error {
	todo := plants
	for range 6 {
		for _, pt := range todo {
			body, err := jobs.Encode(jobs.Manual{Kind: jobs.KindManual, AccountID: accountID, Dataset: pt.ds, Day: pt.day.Day.String(), RequestedBy: "chaos-plant"})
			if err != nil {
				return err
			}
			if err := p.send(ctx, body); err != nil {
				return err
			}
		}
		if _, err := p.drain(ctx); err != nil {
			return err
		}
		rows, err := p.rows(ctx)
		if err != nil {
			return err
		}
		var again []icePlant
		for _, pt := range todo {
			for _, r := range rows {
				if r.Key != pt.day.Key || (r.State == ledger.StateCompleted && r.Generation > pt.day.Generation) {
					continue
				}
				if r.State == ledger.StateRunning { // its exporter was killed: nothing runs now
					if err := p.led.Partitions().ExpireClaim(ctx, r.Key, r.ClaimToken); err != nil && !errors.Is(err, ledger.ErrClaimLost) {
						return err
					}
					p.rep.LeasesEnded++
					p.noteExpired(r)
				}
				again = append(again, pt)
			}
		}
		if todo = again; len(todo) == 0 {
			return nil
		}
	}
	return nil
}

// tableVersion is the table's newest metadata version, 0 when it has
// none: the largest vN.metadata.json in its metadata/ folder, as a load
// without a hint and `daybook table repair` find it (icetable.NewestVersion). Not the version hint: that is a shortcut a
// reader probes past, and a commit whose hint write failed (or raced
// another writer's) leaves it behind the newest version, which a plant at
// hint+1 would replace.
func (p *pipeline) tableVersion(ctx context.Context, bkt, loc string) (int, error) {
	return icetable.NewestVersion(ctx, p.bucketNamed(bkt), loc, 100_000)
}

// plantMetadata writes version n+1 of the table at loc, the trick applied
// to version n, and points the hint at it; it returns its key. It writes
// only where no metadata file is, as a commit does: a version n+1 in place
// is an error, and stays as it was.
func (p *pipeline) plantMetadata(ctx context.Context, bkt, loc string, n int, tr plantTrick, c canaries) (string, error) {
	key := icetable.MetadataKey(loc, n+1)
	var body []byte
	if !tr.empty {
		cur, err := p.get(ctx, bkt, icetable.MetadataKey(loc, n))
		if err != nil {
			return "", err
		}
		var m map[string]any
		if err := json.Unmarshal(cur, &m); err != nil {
			return "", err
		}
		tr.edit(m, c)
		if body, err = json.Marshal(m); err != nil {
			return "", err
		}
	}
	if err := p.bucketNamed(bkt).PutIfAbsent(ctx, key, body, "application/json"); err != nil {
		return "", fmt.Errorf("plant %s: %w", key, err)
	}
	return key, p.putObject(ctx, bkt, icetable.VersionHintKey(loc), []byte(strconv.Itoa(n+1)))
}

func (p *pipeline) putObject(ctx context.Context, bkt, key string, body []byte) error {
	return p.bucketNamed(bkt).Put(ctx, key, body, "application/octet-stream")
}

// outside is every object of bkt outside prefix, and the keys of other
// in otherBucket, with their ETag and time.
func (p *pipeline) outside(ctx context.Context, bkt, prefix, otherBucket string, other []string) (map[string]string, error) {
	own := strings.TrimSuffix(prefix, "/") + "/"
	objs, err := p.objects(ctx, bkt, func(k string) bool { return !strings.HasPrefix(k, own) })
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range objs {
		out[bkt+"/"+k] = v
	}
	for _, k := range other {
		f, err := p.fingerprint(ctx, otherBucket, k)
		if err != nil {
			continue // a deleted canary is a difference
		}
		out[otherBucket+"/"+k] = f
	}
	return out, nil
}

// repairTable rebuilds the broken table at loc as `daybook table repair
// --yes` does: a new metadata version, after the newest, holding every day
// of the dataset whose ledger generation is committed in the bucket (its
// _SUCCESS commits it), whatever the day's state, as its manifest lists
// it; the table errors of those generations are cleared, and of the
// generations no longer committed (an export began the next one). It then
// checks that no row of the dataset keeps a table error: the table reads,
// and nothing runs.
func (p *pipeline) repairTable(ctx context.Context, round int, a account.Account, ds string, store *bucket.Bucket, loc string) error {
	d, err := p.catalog.Get(ds)
	if err != nil {
		return err
	}
	prefix, err := a.Prefix(p.stage)
	if err != nil {
		return err
	}
	newest, err := p.tableVersion(ctx, a.Destination.Bucket, loc)
	if err != nil {
		return err
	}
	rows, err := p.rows(ctx)
	if err != nil {
		return err
	}
	var committed []icetable.Committed
	settled := map[string]int64{} // the generations whose table error the repair settles
	for _, r := range rows {
		if r.AccountID != a.ID || r.Dataset != ds || r.Generation <= 0 {
			continue
		}
		m, why, err := committedManifest(ctx, store, prefix, r)
		switch {
		case err != nil:
			return err
		case why != "":
			p.problem("round %d: the repair of s3://%s/%s leaves out %s (%s): %s", round, store.Name(), loc, r.Key, r.State, why)
			continue
		case m != nil:
			committed = append(committed, icetable.Committed{Day: r.Day, Generation: m.Generation, Reason: m.Reason, RunID: m.RunID,
				ManifestKey: layout.ManifestKey(prefix, ds, r.Day), Files: m.Files})
		}
		settled[r.Key.String()] = r.Generation
	}
	tb := &icetable.Table{Store: store, Location: loc, Dataset: d}
	if _, err := tb.Rebuild(ctx, newest, committed); err != nil {
		return err
	}
	for _, r := range rows {
		if g, ok := settled[r.Key.String()]; ok && r.TableError != "" && g == r.Generation {
			if _, err := p.led.Partitions().ClearTableError(ctx, r.Key, r.Generation); err != nil {
				return err
			}
		}
	}
	if rows, err = p.rows(ctx); err != nil {
		return err
	}
	for _, r := range rows {
		if r.AccountID == a.ID && r.Dataset == ds && r.TableError != "" {
			p.problem("round %d: after the repair of s3://%s/%s, %s (%s, generation %d) keeps its table error: %s", round, store.Name(), loc, r.Key, r.State, r.Generation, r.TableError)
		}
	}
	return nil
}

// committedManifest is the manifest of r's generation when the bucket
// commits it (its _SUCCESS names that generation and that manifest), nil
// when it does not (no _SUCCESS of it: an export of the day began the
// next one); why says what else is wrong with the day.
func committedManifest(ctx context.Context, store *bucket.Bucket, prefix string, r ledger.Row) (*manifest.Manifest, string, error) {
	mkey := layout.ManifestKey(prefix, r.Dataset, r.Day)
	b, err := store.Get(ctx, layout.SuccessKey(prefix, r.Dataset, r.Day), manifest.MaxSuccessBytes)
	if bucket.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	marker, err := manifest.DecodeSuccess(b)
	if err != nil || marker.Generation != r.Generation || marker.ManifestKey != mkey {
		return nil, "", nil
	}
	body, err := store.Get(ctx, mkey, manifest.MaxManifestBytes)
	if err != nil {
		return nil, fmt.Sprintf("its _SUCCESS commits generation %d; %s: %v", r.Generation, mkey, err), nil
	}
	m, err := manifest.Decode(body)
	switch {
	case !marker.Matches(body):
		return nil, fmt.Sprintf("%s is not the manifest its _SUCCESS commits", mkey), nil
	case err != nil:
		return nil, fmt.Sprintf("%s: %v", mkey, err), nil
	case m.Generation != r.Generation:
		return nil, fmt.Sprintf("%s is generation %d", mkey, m.Generation), nil
	}
	return m, "", nil
}

// avroBomb is an Avro object container file of blocks deflate blocks, each
// one record of n zero bytes: a few hundred KB that decompress to
// blocks × n bytes.
func avroBomb(blocks, n int) []byte {
	var raw bytes.Buffer
	raw.Write(binary.AppendVarint(nil, int64(n)))
	raw.Write(make([]byte, n))
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestCompression)
	_, _ = fw.Write(raw.Bytes())
	_ = fw.Close()
	sync := bytes.Repeat([]byte{0xd5}, 16)
	var out bytes.Buffer
	out.WriteString("Obj\x01")
	str := func(s string) { out.Write(binary.AppendVarint(nil, int64(len(s)))); out.WriteString(s) }
	out.Write(binary.AppendVarint(nil, 2))
	str("avro.schema")
	str(`"bytes"`)
	str("avro.codec")
	str("deflate")
	out.Write(binary.AppendVarint(nil, 0))
	out.Write(sync)
	for range blocks {
		out.Write(binary.AppendVarint(nil, 1))
		out.Write(binary.AppendVarint(nil, int64(z.Len())))
		out.Write(z.Bytes())
		out.Write(sync)
	}
	return out.Bytes()
}

// print writes the plants' line of the report.
func (pl IcebergPlants) print(w io.Writer) {
	if pl.Rounds == 0 {
		return
	}
	fmt.Fprintf(w, "  planted iceberg metadata: %d rounds, %d objects planted (%d tricks), %d taken as a broken table and repaired, %d read with daybook's properties; %d partitions delivered through them; %d objects outside the planting prefix changed (of %d compared)\n",
		pl.Rounds, pl.Objects, len(pl.Tricks), pl.Broken, pl.Readable, pl.Delivered, pl.Outside, pl.Checked)
}

// storeFault reports whether a recorded error is a store request that
// failed, as the chaos proxy makes them fail (an injected error answer, a
// connection reset or cut): the ledger retries those, whichever step of
// the commit met them.
func storeFault(msg string) bool {
	for _, s := range []string{"injected by the chaos proxy", "connection reset", "broken pipe", "unexpected EOF", "use of closed network connection"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
