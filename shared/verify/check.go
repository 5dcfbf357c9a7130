package verify

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// Status is a partition's verdict.
type Status string

// The verdicts.
const (
	// StatusOK: committed, and everything checked matches the manifest.
	StatusOK Status = "ok"
	// StatusNotCommitted: no _SUCCESS; the day is not delivered, or is
	// being written again. Not a fault by itself.
	StatusNotCommitted Status = "not_committed"
	// StatusFailed: committed, but something does not match.
	StatusFailed Status = "failed"
	// StatusLatestOnly: no _SUCCESS, and none is coming: the dataset is a
	// snapshot, whose copy is taken for the newest closed day only, and
	// this day is older (the day's delivery manifest lists it in
	// datasets_latest_only, or Options.LatestOnlyBefore says so). Not a
	// fault: its newest day is the table.
	StatusLatestOnly Status = "latest_only"
)

// Level grades one Finding.
type Level string

// The levels: only LevelProblem fails a partition.
const (
	LevelOK      Level = "ok"
	LevelProblem Level = "problem"
	LevelNote    Level = "note"
)

// Finding is one line of the report: what was checked and what was found.
type Finding struct {
	Level   Level
	Subject string // "_SUCCESS", "_manifest.json", a file name, ...
	Detail  string
}

// Result is the report on one partition.
type Result struct {
	Target Target
	// Location is the partition's folder as the store names it
	// (s3://bucket/prefix/v1/events/dt=2026-11-20/).
	Location   string
	Status     Status
	Generation int64
	Files      int
	Rows       int64
	Bytes      int64
	Findings   []Finding
}

// Problems returns the details of the findings that fail the partition.
func (r *Result) Problems() []string {
	var out []string
	for _, f := range r.Findings {
		if f.Level == LevelProblem {
			out = append(out, f.Subject+": "+f.Detail)
		}
	}
	return out
}

// Delivery is what the day's delivery manifest says about the dataset,
// in words ("delivered, generation 2, 118 rows (day complete)"), or "" when
// the check did not get that far.
func (r *Result) Delivery() string {
	for _, f := range r.Findings {
		if f.Subject == deliverySubject {
			return f.Detail
		}
	}
	return ""
}

// Committed reports whether the partition had _SUCCESS when read (its
// Status is neither StatusNotCommitted nor StatusLatestOnly).
func (r *Result) Committed() bool {
	return r.Status != StatusNotCommitted && r.Status != StatusLatestOnly
}

func (r *Result) add(l Level, subject, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Level: l, Subject: subject, Detail: fmt.Sprintf(format, args...)})
}

// checker holds one Check's state.
type checker struct {
	ctx  context.Context
	b    Reader
	t    Target
	o    Options
	r    *Result
	pp   string           // partition prefix
	keys map[string]int64 // listed key -> size
	// committed is whether _SUCCESS was there when read.
	committed bool
	// latestOnly: the day's delivery manifest lists the dataset as a
	// snapshot with no copy of the day; listedMissing: as missing.
	latestOnly, listedMissing bool
}

// Check verifies one partition with read access only: `_SUCCESS` names the
// partition's `_manifest.json` by SHA-256 and generation; the data files
// under the partition are exactly the manifest's, with its sizes, CRC32C and
// (where cheap, see Options) row counts; the load scripts are there; and
// what the day's delivery manifest says about the dataset. An error means
// the bucket could not be read (access, network), not that the partition is
// bad: that is Result.Status.
func Check(ctx context.Context, b Reader, t Target, o Options) (*Result, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	if o.CountRows != nil {
		o.Download = true
	}
	c := &checker{ctx: ctx, b: b, t: t, o: o, r: &Result{Target: t, Location: b.URI(t.PartitionPrefix())}, pp: t.PartitionPrefix(), keys: map[string]int64{}}
	var err error
	if err = c.list(); err != nil {
		return nil, err
	}
	if c.committed, err = c.partition(); err != nil {
		return nil, err
	}
	if err := c.delivery(); err != nil {
		return nil, err
	}
	switch {
	case !c.committed && c.latestOnly:
		c.r.Status = StatusLatestOnly
	case !c.committed && !c.listedMissing && !o.LatestOnlyBefore.IsZero() && t.Day.Before(o.LatestOnlyBefore):
		c.r.add(LevelNote, deliverySubject, "%s is a snapshot dataset, copied for the newest closed day (%s) only: this older day has no copy by design", t.name(), o.LatestOnlyBefore)
		c.r.Status = StatusLatestOnly
	case !c.committed:
		c.r.Status = StatusNotCommitted
	case len(c.r.Problems()) > 0:
		c.r.Status = StatusFailed
	default:
		c.r.Status = StatusOK
	}
	return c.r, nil
}

func (c *checker) list() error {
	objs, err := c.b.List(c.ctx, c.pp, MaxPartitionObjects)
	if err != nil {
		return err
	}
	for _, o := range objs {
		c.keys[o.Key] = o.Size
	}
	return nil
}

// get reads a whole object of at most limit bytes (bucket.ErrTooLarge
// beyond); found is false when it does not exist.
func (c *checker) get(key string, limit int64) (body []byte, found bool, err error) {
	body, err = c.b.Get(c.ctx, key, limit)
	if bucket.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return body, true, nil
}

// partition checks _SUCCESS, the manifest and the files; it reports
// whether the partition is committed.
func (c *checker) partition() (bool, error) {
	r := c.r
	successKey := c.pp + layout.SuccessName
	if _, ok := c.keys[successKey]; !ok {
		if len(c.keys) == 0 {
			r.add(LevelNote, layout.SuccessName, "absent, and nothing is in the day folder: not delivered")
		} else {
			r.add(LevelNote, layout.SuccessName, "absent: the partition is not complete (being written, or not delivered); do not read it")
		}
		return false, nil
	}
	sb, found, err := c.get(successKey, manifest.MaxSuccessBytes)
	if err != nil || !found {
		if err == nil {
			r.add(LevelNote, layout.SuccessName, "listed but gone when read: the partition is being written again")
		}
		return false, err
	}
	succ, err := manifest.DecodeSuccess(sb)
	if err != nil {
		r.add(LevelProblem, layout.SuccessName, "%v", err)
		return true, nil
	}
	r.Generation = succ.Generation
	manifestKey := c.pp + layout.ManifestName
	if succ.ManifestKey != manifestKey {
		r.add(LevelProblem, layout.SuccessName, "names manifest %s, not this partition's %s", succ.ManifestKey, manifestKey)
		return true, nil
	}
	r.add(LevelOK, layout.SuccessName, "generation %d, committed %s", succ.Generation, succ.CommittedAt.Format("2006-01-02T15:04:05Z"))
	mb, found, err := c.get(manifestKey, manifest.MaxManifestBytes)
	if err != nil {
		return true, err
	}
	if !found {
		r.add(LevelProblem, layout.ManifestName, "missing, though _SUCCESS names it")
		return true, nil
	}
	if !succ.Matches(mb) {
		r.add(LevelProblem, layout.ManifestName, "its SHA-256 is not the one _SUCCESS commits: edited or replaced after the commit")
	}
	m, err := manifest.Decode(mb)
	if err != nil {
		r.add(LevelProblem, layout.ManifestName, "%v", err)
		return true, nil
	}
	c.manifestHeader(m, succ)
	if err := c.files(m); err != nil {
		return true, err
	}
	c.loadScripts(m)
	return true, nil
}

func (c *checker) manifestHeader(m *manifest.Manifest, succ manifest.Success) {
	r := c.r
	var bad []string
	if m.Generation != succ.Generation {
		bad = append(bad, fmt.Sprintf("generation %d, _SUCCESS says %d", m.Generation, succ.Generation))
	}
	if m.Dataset != c.t.name() {
		bad = append(bad, fmt.Sprintf("dataset %q", m.Dataset))
	}
	if m.Day != c.t.Day.String() {
		bad = append(bad, fmt.Sprintf("day %q", m.Day))
	}
	var rows, size int64
	for _, f := range m.Files {
		rows += f.Rows
		size += f.Bytes
	}
	if m.Totals.Files != len(m.Files) || m.Totals.Rows != rows || m.Totals.Bytes != size {
		bad = append(bad, fmt.Sprintf("totals %+v do not sum its files", m.Totals))
	}
	r.Files, r.Rows, r.Bytes = len(m.Files), rows, size
	if len(bad) > 0 {
		r.add(LevelProblem, layout.ManifestName, "%s", strings.Join(bad, "; "))
		return
	}
	r.add(LevelOK, layout.ManifestName, "SHA-256 matches _SUCCESS; dataset %s, day %s, schema version %d, %s, %d file(s), %d rows",
		m.Dataset, m.Day, m.SchemaVersion, m.Format, len(m.Files), rows)
}

// loadScripts notes the load scripts the partition lacks; their absence
// does not make the data wrong. The scripts expected are those of the
// engines that read the bucket's store (its URI's scheme) in the
// manifest's format and columns: S3's engines on S3, BigQuery, Snowflake
// and DuckDB on GCS, and on Azure also Fabric (Parquet without lists)
// and Databricks.
func (c *checker) loadScripts(m *manifest.Manifest) {
	var ds dataset.Dataset
	for _, col := range m.Schema {
		t, err := dataset.ParseType(col.Type)
		if err != nil {
			continue // a type this build does not know: the manifest check names it
		}
		ds.Columns = append(ds.Columns, dataset.Column{Name: col.Name, Type: t, Nullable: col.Nullable})
	}
	engines := loadsql.EnginesFor(storeOf(c.b.URI("")), fileformat.Format(m.Format), ds)
	var missing []string
	for _, e := range engines {
		if _, ok := c.keys[c.pp+layout.LoadDir+"/"+e+".sql"]; !ok {
			missing = append(missing, e+".sql")
		}
	}
	if len(missing) > 0 {
		c.r.add(LevelNote, layout.LoadDir+"/", "no %s", strings.Join(missing, ", "))
		return
	}
	c.r.add(LevelOK, layout.LoadDir+"/", "%s", strings.Join(engines, ", "))
}

// files checks the data files against the manifest, then lists what else
// is under the partition.
func (c *checker) files(m *manifest.Manifest) error {
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Key] = true
		if err := c.file(f); err != nil {
			return err
		}
	}
	var orphans, others []string
	for k := range c.keys {
		rel := strings.TrimPrefix(k, c.pp)
		switch {
		case listed[k]:
		case layout.IsDataKey(k):
			orphans = append(orphans, rel)
		case rel == layout.SuccessName, rel == layout.ManifestName, strings.HasPrefix(rel, layout.LoadDir+"/"):
		default:
			others = append(others, rel)
		}
	}
	sort.Strings(orphans)
	sort.Strings(others)
	for _, k := range orphans {
		c.r.add(LevelProblem, k, "data file not in the manifest: a reader of the folder would read it")
	}
	if len(others) > 0 {
		c.r.add(LevelNote, "other objects", "%s (not data, not read by the load scripts)", strings.Join(others, ", "))
	}
	return nil
}

// storeOf is the loadsql store of a bucket by its URI: gs:// is GCS,
// abfss:// (and the other Azure schemes) Azure, anything else S3.
func storeOf(uri string) string {
	scheme, _, _ := strings.Cut(uri, "://")
	switch strings.ToLower(scheme) {
	case "gs":
		return loadsql.StoreGCS
	case "abfss", "abfs", "az", "azure":
		return loadsql.StoreAzure
	}
	return loadsql.StoreS3
}
