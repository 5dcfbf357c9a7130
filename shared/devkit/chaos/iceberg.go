package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// The Iceberg table of the account that keeps one (the first demo account,
// destination.table_format: iceberg), checked after every drained round,
// when no exporter runs, and once more at the end (issue 24 (a)-(d)):
//   - (d) the table loads as a reader finds it (version hint, probing) and
//     its current snapshot plans;
//   - (a) every data file the current snapshot references exists, with
//     the size the snapshot records;
//   - (c) every completed partition's day is in the table with exactly its
//     _manifest.json's files and rows, whichever exporter committed it and
//     however many days committed at once; no day is in the table that the
//     ledger does not hold;
//   - (b) a completed partition's dt= folder holds its manifest's files,
//     _manifest.json, _SUCCESS and _load/ only, and the table's own files
//     lie in the table's metadata/ folder only;
//   - and, at the end, the table's rows read back by iceberg-go are, per
//     dt, exactly the manifest's row count.

// TableChecks counts what the table check covered.
type TableChecks struct {
	Checks int   // table checks made (tables × rounds, and the final one)
	Days   int   // days found in the table as their manifest lists them
	Files  int   // data files of current snapshots found to exist
	Rows   int64 // rows read back through the table at the end
}

// tableStore is the account's bucket as the table reads it.
func (p *pipeline) tableStore(a account.Account) *bucket.Bucket {
	return p.bucketNamed(a.Destination.Bucket)
}

func tableLocation(prefix, ds string) string {
	return strings.TrimSuffix(layout.DatasetPrefix(prefix, ds), "/")
}

// checkTables checks the table of every account that keeps one against
// the ledger's completed rows; when (the check's label) prefixes each
// problem; rows says whether the rows are read back too.
func (p *pipeline) checkTables(ctx context.Context, when string, readRows bool) error {
	rows, err := p.rows(ctx)
	if err != nil {
		return err
	}
	for _, a := range p.accounts {
		if a.Destination.TableFormat != account.TableFormatIceberg {
			continue
		}
		prefix, err := a.Prefix(p.stage)
		if err != nil {
			return err
		}
		for _, ds := range a.Datasets {
			var completed []ledger.Row
			for _, r := range rows {
				if r.AccountID == a.ID && r.Dataset == ds && r.State == ledger.StateCompleted {
					completed = append(completed, r)
				}
			}
			tc := tableCheck{p: p, a: a, prefix: prefix, ds: ds, when: when}
			if err := tc.run(ctx, completed, readRows); err != nil {
				return err
			}
		}
	}
	return nil
}

// tableCheck is the check of one dataset's table.
type tableCheck struct {
	p      *pipeline
	a      account.Account
	prefix string
	ds     string
	when   string
}

func (c *tableCheck) problem(format string, args ...any) {
	loc := tableLocation(c.prefix, c.ds)
	c.p.problem("%stable %s: %s", c.when, c.p.tableStore(c.a).URI(loc), fmt.Sprintf(format, args...))
}

type tableFile struct{ rows, bytes int64 }

func (c *tableCheck) run(ctx context.Context, completed []ledger.Row, readRows bool) error {
	c.p.rep.Checked.Table.Checks++
	store := c.p.tableStore(c.a)
	loc := tableLocation(c.prefix, c.ds)
	tbl, err := icetable.Load(ctx, store, loc)
	if errors.Is(err, icetable.ErrNoTable) {
		if len(completed) > 0 {
			c.problem("no table, and %d days are completed", len(completed))
		}
		return nil
	}
	if err != nil {
		c.problem("unreadable: %v", err)
		return nil
	}
	got := map[civil.Date]map[string]tableFile{}
	files, err := icetable.LiveFiles(ctx, tbl)
	if err != nil {
		c.problem("unreadable: %v", err)
		return nil
	}
	for _, f := range files {
		key := strings.TrimPrefix(f.FilePath(), store.URI(""))
		info, err := store.Head(ctx, key)
		switch {
		case bucket.IsNotFound(err):
			c.problem("the current snapshot references %s, which is missing", key)
		case err != nil:
			return err
		case info.Size != f.FileSizeBytes():
			c.problem("the current snapshot references %s as %d bytes; it is %d", key, f.FileSizeBytes(), info.Size)
		default:
			c.p.rep.Checked.Table.Files++
		}
		day, ok := dayOfFile(key)
		if !ok || day != icetable.DayOf(f) {
			c.problem("data file %s is not in the dt= folder of its partition %s", key, icetable.DayOf(f))
			continue
		}
		if got[day] == nil {
			got[day] = map[string]tableFile{}
		}
		got[day][key] = tableFile{f.Count(), f.FileSizeBytes()}
	}
	want := map[civil.Date]int64{}
	for _, r := range completed {
		m, err := c.manifest(ctx, r)
		if err != nil {
			return err
		}
		if m == nil {
			continue // verify reports it
		}
		exp := map[string]tableFile{}
		for _, f := range m.Files {
			exp[f.Key] = tableFile{f.Rows, f.Bytes}
		}
		want[r.Day] = m.Totals.Rows
		if !mapsEqual(got[r.Day], exp) {
			c.problem("dt=%s holds %s; its _manifest.json (generation %d) lists %s", r.Day, describe(got[r.Day]), m.Generation, describe(exp))
		} else {
			c.p.rep.Checked.Table.Days++
		}
	}
	for day, files := range got {
		if _, ok := want[day]; !ok && !c.held(completed, day) {
			c.problem("dt=%s holds %s, and the ledger has no such day", day, describe(files))
		}
	}
	if err := c.checkKeys(ctx, completed); err != nil {
		return err
	}
	if readRows && tbl.CurrentSnapshot() != nil {
		return c.readRows(ctx, tbl, want)
	}
	return nil
}

// held reports whether the ledger holds day for the dataset at all (a
// partition not completed may keep its previous generation in the table).
func (c *tableCheck) held(completed []ledger.Row, day civil.Date) bool {
	for _, r := range completed {
		if r.Day == day {
			return true
		}
	}
	for _, k := range c.p.expected() {
		if k.AccountID == c.a.ID && k.Dataset == c.ds && k.Day == day {
			return true
		}
	}
	return false
}

func (c *tableCheck) manifest(ctx context.Context, r ledger.Row) (*manifest.Manifest, error) {
	body, err := c.p.get(ctx, c.a.Destination.Bucket, layout.ManifestKey(c.prefix, c.ds, r.Day))
	if err != nil {
		return nil, nil
	}
	m, err := manifest.Decode(body)
	if err != nil {
		return nil, nil
	}
	return m, nil
}

// checkKeys: (b) the table's files are in its metadata/ folder only, and
// a completed day's folder holds nothing the commit protocol does not put
// there.
func (c *tableCheck) checkKeys(ctx context.Context, completed []ledger.Row) error {
	loc := tableLocation(c.prefix, c.ds) + "/"
	listed := map[string]bool{}
	done := map[string]bool{}
	for _, r := range completed {
		done[layout.PartitionPrefix(c.prefix, c.ds, r.Day)] = true
	}
	objs, err := c.p.tableStore(c.a).List(ctx, loc, 100_000)
	if err != nil {
		return err
	}
	for _, o := range objs {
		listed[o.Key] = true
	}
	for key := range listed {
		rel := strings.TrimPrefix(key, loc)
		if strings.HasPrefix(rel, icetable.MetadataDir+"/") {
			continue
		}
		isTable := strings.HasSuffix(key, ".avro") || strings.HasSuffix(key, ".metadata.json") || strings.HasSuffix(key, icetable.VersionHintName)
		if isTable {
			c.problem("table file %s outside %s%s/", key, loc, icetable.MetadataDir)
		}
		pp := key[:strings.LastIndexByte(key, '/')+1]
		if strings.HasSuffix(pp, layout.LoadDir+"/") {
			pp = strings.TrimSuffix(pp, layout.LoadDir+"/")
		}
		if done[pp] && !isTable && !layout.IsDataKey(key) && !slices.Contains([]string{layout.SuccessName, layout.ManifestName}, strings.TrimPrefix(key, pp)) &&
			!strings.HasPrefix(strings.TrimPrefix(key, pp), layout.LoadDir+"/") {
			c.problem("%s: an object the commit protocol does not write, in a committed folder", key)
		}
	}
	return nil
}

// readRows reads the table's current snapshot with iceberg-go and compares
// its rows per day of the partition column with each manifest's count.
func (c *tableCheck) readRows(ctx context.Context, tbl *table.Table, want map[civil.Date]int64) error {
	ds, err := c.p.catalog.Get(c.ds)
	if err != nil {
		return err
	}
	got, err := icetable.RowsPerDay(ctx, tbl, ds)
	if err != nil {
		c.problem("unreadable: %v", err)
		return nil
	}
	for day, n := range want {
		if got[day] != n {
			c.problem("dt=%s reads back %d rows; its _manifest.json has %d", day, got[day], n)
		}
		c.p.rep.Checked.Table.Rows += got[day]
	}
	return nil
}

// dayOfFile is the day of a data file's dt= folder.
func dayOfFile(key string) (civil.Date, bool) {
	i := strings.Index(key, "/dt=")
	if i < 0 || len(key) < i+14 {
		return civil.Date{}, false
	}
	d, err := civil.Parse(key[i+4 : i+14])
	return d, err == nil
}

func mapsEqual(a, b map[string]tableFile) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func describe(files map[string]tableFile) string {
	var rows int64
	for _, f := range files {
		rows += f.rows
	}
	return fmt.Sprintf("%d rows in %d files", rows, len(files))
}

// icebergAccount marks, on each store, the first account that can keep a
// table (Parquet, UTC days) as keeping one.
func icebergAccount(accts []account.Account) {
	done := map[account.StoreKind]bool{}
	for i := range accts {
		a := &accts[i]
		if done[a.Destination.Kind()] || cmp.Or(a.Destination.Format, fileformat.Default) != fileformat.Parquet {
			continue
		}
		if a.TimeZone == "" || a.TimeZone == account.DefaultTimeZone {
			a.Destination.TableFormat = account.TableFormatIceberg
			done[a.Destination.Kind()] = true
		}
	}
}

// breakTables, for the self-test, breaks the table check's invariants once
// each in the account that keeps a table, avoiding the partitions in
// avoid: a data file of a current snapshot deleted (a), and another
// dataset's version hint pointed past every metadata file (d: the table
// no longer loads). It returns what the check must report.
func (p *pipeline) breakTables(ctx context.Context, avoid []ledger.Row) ([]string, error) {
	rows, err := p.rows(ctx)
	if err != nil {
		return nil, err
	}
	var want []string
	for _, a := range p.accounts {
		if a.Destination.TableFormat != account.TableFormatIceberg {
			continue
		}
		prefix, err := a.Prefix(p.stage)
		if err != nil {
			return nil, err
		}
		var lost *ledger.Row
		for i, r := range rows {
			if r.AccountID == a.ID && r.State == ledger.StateCompleted && r.Rows > 0 && r.Files > 0 &&
				!slices.ContainsFunc(avoid, func(x ledger.Row) bool { return x.Key == r.Key }) {
				lost = &rows[i]
				break
			}
		}
		if lost == nil {
			return nil, errors.New("chaos self-test: no completed partition with rows in the account with a table")
		}
		m, err := (&tableCheck{p: p, a: a, prefix: prefix, ds: lost.Dataset}).manifest(ctx, *lost)
		if err != nil || m == nil || len(m.Files) == 0 {
			return nil, fmt.Errorf("chaos self-test: manifest of %s: %v", lost.Key, err)
		}
		store := p.tableStore(a)
		if err := store.Delete(ctx, m.Files[0].Key); err != nil {
			return nil, err
		}
		want = append(want, fmt.Sprintf("table %s: the current snapshot references %s, which is missing",
			store.URI(tableLocation(prefix, lost.Dataset)), m.Files[0].Key))
		other := ""
		for _, ds := range a.Datasets {
			if ds != lost.Dataset {
				other = ds
				break
			}
		}
		if other == "" {
			continue // one table, whose break is the missing file
		}
		// An empty metadata file past the newest, and the hint naming it: a
		// load reads what the hint names, and it does not parse.
		oloc := tableLocation(prefix, other)
		n, err := icetable.NewestVersion(ctx, store, oloc, 100_000)
		if err != nil {
			return nil, err
		}
		if err := store.PutIfAbsent(ctx, icetable.MetadataKey(oloc, n+1), nil, "application/json"); err != nil {
			return nil, err
		}
		if err := store.Put(ctx, icetable.VersionHintKey(oloc), []byte(strconv.Itoa(n+1)), "text/plain"); err != nil {
			return nil, err
		}
		want = append(want, fmt.Sprintf("table %s: unreadable: ", store.URI(tableLocation(prefix, other))))
	}
	if len(want) == 0 {
		return nil, errors.New("chaos self-test: no account keeps a table")
	}
	return want, nil
}
