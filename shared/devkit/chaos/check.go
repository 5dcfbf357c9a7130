package chaos

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/sourcetest"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/source"
	"github.com/daybook-dev/daybook/shared/verify"
)

// rowKeys name a row within its partition: the source has one row per key.
var rowKeys = map[string][]string{"events": {"event_id"}, "profiles": {"profile_id"}, "daily_stats": {"metric", "dimension"}}

// check verifies, once the pipeline has drained:
//   - every expected partition's ledger row is completed, and every row is;
//   - every completed partition has _SUCCESS, and its data files are exactly
//     its manifest's, with the manifest's sizes, CRC32C and row counts
//     (verify.Check, every file downloaded), its generation and rows are the
//     ledger's;
//   - its rows are the source's rows of that day, each exactly once (by
//     row key: no row doubled or lost);
//   - every _SUCCESS the store ever accepted for a partition carries a
//     higher generation than the one before (a retried PUT repeats the same
//     run's), so no generation is committed twice, and the last is the
//     ledger's;
//   - every generation committed (every distinct _SUCCESS) has exactly one
//     committed event recorded in the outbox and exactly one change-log
//     entry, and nothing else has either (changes.go);
//   - every day's delivery manifest agrees with the ledger;
//   - no incomplete multipart upload is left in any bucket;
//   - no account's object lies under another's prefix (accounts.go);
//   - the Iceberg table of the account that keeps one holds every
//     completed day as its manifest lists it, and reads back its rows
//     (iceberg.go; also after every round);
//   - and, after each round's sweeps, every claim whose lease ended was
//     reclaimed within two sweeps (reclaim.go).
func (p *pipeline) check(ctx context.Context) error {
	c := &p.rep.Checked
	rows, err := p.rows(ctx)
	if err != nil {
		return err
	}
	byKey := map[partition.Key]ledger.Row{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	for _, k := range p.expected() {
		if r, ok := byKey[k]; !ok || r.State != ledger.StateCompleted {
			p.problem("%s: not completed (%s)", k, r.State)
		}
	}
	commits := map[string][]Commit{}
	for _, cm := range p.faults.Commits() {
		commits[cm.Partition] = append(commits[cm.Partition], cm)
	}
	days := map[string]map[civil.Date]bool{}
	logs := map[string]map[partition.Key][]events.Change{}
	for _, r := range rows {
		a := p.account(r.AccountID)
		prefix, err := a.Prefix(p.stage)
		if err != nil {
			return err
		}
		if logs[a.ID] == nil {
			if logs[a.ID], err = p.changeLog(ctx, a, prefix); err != nil {
				return err
			}
		}
		if days[a.ID] == nil {
			days[a.ID] = map[civil.Date]bool{}
		}
		days[a.ID][r.Day] = true
		if r.State != ledger.StateCompleted {
			p.problem("%s: row %s after the drain", r.Key, r.State)
			continue
		}
		pp := layout.PartitionPrefix(prefix, r.Dataset, r.Day)
		if err := p.checkPartition(ctx, a, r, prefix); err != nil {
			return err
		}
		p.checkGenerations(r, pp, commits[pp])
		if err := p.checkChanges(ctx, r.Key, commits[pp], logs[a.ID][r.Key]); err != nil {
			return err
		}
		c.Partitions++
	}
	for _, a := range p.accounts {
		for d := range days[a.ID] {
			if err := p.checkDelivery(ctx, a, d, byKey); err != nil {
				return err
			}
		}
		c.Buckets++
		if a.Destination.Kind() != account.StoreS3 {
			// Neither keeps an upload nobody finished where it can be
			// listed: a GCS resumable session and Azure's staged blocks
			// are invisible and expire by themselves; what a killed run
			// left visible, the partition check finds.
			continue
		}
		out, err := p.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(a.Destination.Bucket)})
		if err != nil {
			return err
		}
		for _, u := range out.Uploads {
			p.problem("s3://%s/%s: incomplete multipart upload %s left", a.Destination.Bucket, aws.ToString(u.Key), aws.ToString(u.UploadId))
		}
	}
	if err := p.checkAccountPrefixes(ctx); err != nil {
		return err
	}
	if err := p.checkTables(ctx, "", true); err != nil {
		return err
	}
	c.Commits = len(p.faults.Commits())
	if owed := p.faults.Owed(); len(owed) > 0 {
		p.problem("no exporter was killed at %s: the run never wrote there, or found no exporter behind the request", strings.Join(owed, ", "))
	}
	q, err := p.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &p.dlqURL,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		return err
	}
	fmt.Sscan(q.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)], &p.rep.DeadLettered)
	return nil
}

func (p *pipeline) problem(format string, args ...any) {
	p.rep.Problems = append(p.rep.Problems, fmt.Sprintf(format, args...))
}

func (p *pipeline) account(id string) account.Account {
	for _, a := range p.accounts {
		if a.ID == id {
			return a
		}
	}
	return account.Account{}
}

// checkPartition verifies a completed partition's files and rows.
func (p *pipeline) checkPartition(ctx context.Context, a account.Account, r ledger.Row, prefix string) error {
	ds, err := p.catalog.Get(r.Dataset)
	if err != nil {
		return err
	}
	var got []string
	sliced := false
	count := func(key string, data []byte) (int64, error) {
		sliced = sliced || strings.HasPrefix(path.Base(key), layout.DataPrefix+"s")
		keys, err := fileKeys(ds, key, data)
		got = append(got, keys...)
		return int64(len(keys)), err
	}
	t := verify.Target{Bucket: a.Destination.Bucket, Prefix: prefix, Dataset: r.Dataset, Day: r.Day}
	pp := t.PartitionPrefix()
	rep, err := verify.Check(ctx, p.tableStore(a), t, verify.Options{CountRows: count})
	if err != nil {
		return err
	}
	for _, pr := range rep.Problems() {
		p.problem("%s: %s", pp, pr)
	}
	if !rep.Committed() {
		p.problem("%s: completed in the ledger, no _SUCCESS", pp)
		return nil
	}
	if rep.Generation != r.Generation || rep.Rows != r.Rows || rep.Files != r.Files {
		p.problem("%s: committed generation %d with %d rows in %d files; the ledger says %d, %d, %d", pp,
			rep.Generation, rep.Rows, rep.Files, r.Generation, r.Rows, r.Files)
	}
	want, err := p.sourceKeys(ctx, a, ds, r.Day)
	if err != nil {
		return err
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		p.problem("%s: %d rows delivered (%d distinct), the source has %d: %s", pp, len(got), len(slices.Compact(slices.Clone(got))), len(want), diff(got, want))
	}
	p.rep.Checked.Files += rep.Files
	p.rep.Checked.Rows += int64(len(got))
	if sliced {
		p.rep.Checked.Sliced++
	}
	return nil
}

// diff names the first keys delivered but not in the source, and missing.
func diff(got, want []string) string {
	count := map[string]int{}
	for _, k := range got {
		count[k]++
	}
	for _, k := range want {
		count[k]--
	}
	var extra, missing []string
	for k, n := range count {
		switch {
		case n > 0:
			extra = append(extra, fmt.Sprintf("%s x%d", k, n))
		case n < 0:
			missing = append(missing, k)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return fmt.Sprintf("doubled or foreign %v, lost %v", extra[:min(3, len(extra))], missing[:min(3, len(missing))])
}

// sourceKeys reads the row keys of a partition from the source, sorted.
func (p *pipeline) sourceKeys(ctx context.Context, a account.Account, ds dataset.Dataset, day civil.Date) ([]string, error) {
	src, err := source.NewSQL(p.source, dataset.DialectSQLite, "chaos")
	if err != nil {
		return nil, err
	}
	idx := keyIndexes(ds)
	start, end := a.Window(day)
	var out []string
	_, err = sourcetest.Rows(ctx, src, source.Query{AccountID: a.ID, Dataset: ds, Day: day, Start: start, End: end}, func(row []any) error {
		parts := make([]string, len(idx))
		for i, j := range idx {
			parts[i] = fmt.Sprint(row[j])
		}
		out = append(out, strings.Join(parts, "|"))
		return nil
	})
	slices.Sort(out)
	return out, err
}

func keyIndexes(ds dataset.Dataset) []int {
	var idx []int
	for _, name := range rowKeys[ds.Name] {
		for i, c := range ds.Columns {
			if c.Name == name {
				idx = append(idx, i)
			}
		}
	}
	return idx
}

// fileKeys reads the row keys of one data file.
func fileKeys(ds dataset.Dataset, key string, data []byte) ([]string, error) {
	names := rowKeys[ds.Name]
	format, _ := fileformat.ByExtension(key)
	var out []string
	switch format {
	case fileformat.Parquet:
		f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, err
		}
		cols := make([]int, len(names))
		for i, n := range names {
			leaf, ok := f.Schema().Lookup(n)
			if !ok {
				return nil, fmt.Errorf("%s: no column %s", key, n)
			}
			cols[i] = leaf.ColumnIndex
		}
		buf := make([]parquet.Row, 256)
		for _, rg := range f.RowGroups() {
			rows := rg.Rows()
			for {
				n, err := rows.ReadRows(buf)
				for _, row := range buf[:n] {
					parts := make([]string, len(cols))
					for _, v := range row {
						if i := slices.Index(cols, v.Column()); i >= 0 {
							parts[i] = string(v.ByteArray())
						}
					}
					out = append(out, strings.Join(parts, "|"))
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					rows.Close()
					return nil, err
				}
			}
			rows.Close()
		}
	case fileformat.NDJSON:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				return nil, err
			}
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = fmt.Sprint(m[n])
			}
			out = append(out, strings.Join(parts, "|"))
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: unknown data file type", key)
	}
	return out, nil
}

// checkGenerations: the store accepted this partition's _SUCCESS with ever
// higher generations, one run per generation, the last the ledger's.
func (p *pipeline) checkGenerations(r ledger.Row, pp string, seq []Commit) {
	if len(seq) == 0 {
		p.problem("%s: no _SUCCESS was ever written through the proxies", pp)
		return
	}
	runOf := map[int64]string{}
	for i, c := range seq {
		if prev, ok := runOf[c.Generation]; ok && prev != c.RunID {
			p.problem("%s: generation %d committed by two runs (%s, %s)", pp, c.Generation, prev, c.RunID)
		}
		runOf[c.Generation] = c.RunID
		if i > 0 && c != seq[i-1] && c.Generation <= seq[i-1].Generation {
			p.problem("%s: generation %d committed after %d", pp, c.Generation, seq[i-1].Generation)
		}
	}
	if last := seq[len(seq)-1]; last.Generation != r.Generation {
		p.problem("%s: last committed generation %d, the ledger's %d", pp, last.Generation, r.Generation)
	}
	p.rep.Checked.Generations += len(runOf)
}

// checkAtRestDeliveries runs after every drained round, when no exporter
// runs: a day whose partitions are all at rest (completed or failed) has
// had its last run record its outcome, so its delivery manifest must say
// what the ledger says now. (A running, queued or pending partition may
// legitimately be ahead of the manifest until its run ends.)
func (p *pipeline) checkAtRestDeliveries(ctx context.Context, round int) error {
	rows, err := p.rows(ctx)
	if err != nil {
		return err
	}
	byKey := map[partition.Key]ledger.Row{}
	atRest := map[string]map[civil.Date]bool{}
	for _, r := range rows {
		byKey[r.Key] = r
		if atRest[r.AccountID] == nil {
			atRest[r.AccountID] = map[civil.Date]bool{}
		}
		ok, seen := atRest[r.AccountID][r.Day]
		atRest[r.AccountID][r.Day] = (ok || !seen) && (r.State == ledger.StateCompleted || r.State == ledger.StateFailed)
	}
	counted := p.rep.Checked.Deliveries
	defer func() {
		p.rep.Checked.AtRest += p.rep.Checked.Deliveries - counted
		p.rep.Checked.Deliveries = counted
	}()
	for _, a := range p.accounts {
		for day, ok := range atRest[a.ID] {
			if !ok || len(rowsOf(byKey, a, day)) != len(a.Datasets) {
				continue
			}
			before := len(p.rep.Problems)
			if err := p.checkDelivery(ctx, a, day, byKey); err != nil {
				return err
			}
			for i := before; i < len(p.rep.Problems); i++ {
				p.rep.Problems[i] = fmt.Sprintf("after round %d: %s", round, p.rep.Problems[i])
			}
		}
	}
	return nil
}

func rowsOf(rows map[partition.Key]ledger.Row, a account.Account, day civil.Date) []ledger.Row {
	var out []ledger.Row
	for _, ds := range a.Datasets {
		if r, ok := rows[partition.Key{AccountID: a.ID, Dataset: ds, Day: day}]; ok {
			out = append(out, r)
		}
	}
	return out
}

// checkDelivery compares the account's delivery manifest of day with the
// ledger rows of its datasets.
func (p *pipeline) checkDelivery(ctx context.Context, a account.Account, day civil.Date, rows map[partition.Key]ledger.Row) error {
	prefix, err := a.Prefix(p.stage)
	if err != nil {
		return err
	}
	key := layout.DeliveryManifestKey(prefix, day)
	b, err := p.get(ctx, a.Destination.Bucket, key)
	if err != nil {
		p.problem("%s: delivery manifest: %v", p.bucketNamed(a.Destination.Bucket).URI(key), err)
		return nil
	}
	d, err := manifest.DecodeDelivery(b)
	if err != nil {
		p.problem("%s: %v", key, err)
		return nil
	}
	delivered := map[string]manifest.DeliveredDataset{}
	for _, x := range d.DatasetsDelivered {
		delivered[x.Name] = x
	}
	missing := map[string]manifest.MissingDataset{}
	for _, x := range d.DatasetsMissing {
		missing[x.Name] = x
	}
	all := true
	for _, ds := range a.Datasets {
		r, ok := rows[partition.Key{AccountID: a.ID, Dataset: ds, Day: day}]
		x, isDelivered := delivered[ds]
		switch {
		case ok && r.State == ledger.StateCompleted:
			if !isDelivered || x.Generation != r.Generation || x.Rows != r.Rows || x.Files != r.Files || x.Manifest != r.ManifestKey {
				p.problem("%s: %s is completed (generation %d, %d rows) in the ledger; the manifest says %+v / missing %+v", key, ds, r.Generation, r.Rows, x, missing[ds])
			}
		case ok && isDelivered && r.State == ledger.StateFailed && x.Generation == r.Generation && x.Manifest == r.ManifestKey:
			// A failed attempt that stopped before its generation began
			// leaves the one committed before: it must still be committed.
			standing, err := p.standing(ctx, a, r)
			if err != nil {
				return err
			}
			if !standing {
				p.problem("%s: %s is failed in the ledger and listed delivered at generation %d, which its _SUCCESS does not commit", key, ds, r.Generation)
			}
		default:
			all = false
			if isDelivered || missing[ds].State != string(r.State) {
				p.problem("%s: %s is %q in the ledger; the manifest says delivered %v, missing %+v", key, ds, r.State, isDelivered, missing[ds])
			}
		}
	}
	if d.Complete != all {
		p.problem("%s: complete %v, the ledger says %v", key, d.Complete, all)
	}
	p.rep.Checked.Deliveries++
	return nil
}

// standing reports whether the partition of the failed row r still has the
// _SUCCESS of its last committed generation, naming the manifest the row
// recorded.
func (p *pipeline) standing(ctx context.Context, a account.Account, r ledger.Row) (bool, error) {
	prefix, err := a.Prefix(p.stage)
	if err != nil {
		return false, err
	}
	body, err := p.get(ctx, a.Destination.Bucket, layout.SuccessKey(prefix, r.Dataset, r.Day))
	var nf *s3types.NoSuchKey
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m, err := manifest.DecodeSuccess(body)
	return err == nil && m.Generation == r.Generation && m.ManifestKey == r.ManifestKey, nil
}
