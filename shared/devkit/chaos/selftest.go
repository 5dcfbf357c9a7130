package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// selfTest breaks what the run delivered, once for each invariant, and
// checks again: every break must be reported, or the check could not fail.
// It runs after the real check, which it leaves as it was.
func (p *pipeline) selfTest(ctx context.Context) error {
	rows, err := p.rows(ctx)
	if err != nil {
		return err
	}
	var picked []ledger.Row // three completed partitions with data on S3, of three datasets
	onStore := map[account.StoreKind]ledger.Row{}
	for _, r := range rows {
		if r.State != ledger.StateCompleted || r.Rows == 0 {
			continue
		}
		kind := p.account(r.AccountID).Destination.Kind()
		if _, ok := onStore[kind]; !ok && kind != account.StoreS3 {
			onStore[kind] = r
		}
		if kind == account.StoreS3 && (len(picked) == 0 || picked[len(picked)-1].Dataset != r.Dataset) {
			picked = append(picked, r)
		}
	}
	if len(picked) < 3 {
		return fmt.Errorf("chaos self-test: %d partitions with rows, want 3", len(picked))
	}
	pp := func(r ledger.Row) (string, string) {
		a := p.account(r.AccountID)
		prefix, _ := a.Prefix(p.stage)
		return a.Destination.Bucket, layout.PartitionPrefix(prefix, r.Dataset, r.Day)
	}
	var want []string
	// A data file lost, and its change-log entry: on S3, and on each other
	// store through its own client.
	lose := []ledger.Row{picked[0]}
	for _, kind := range []account.StoreKind{account.StoreGCS, account.StoreAzure} {
		r, ok := onStore[kind]
		if !ok {
			return fmt.Errorf("chaos self-test: no completed partition with rows on %s", kind)
		}
		lose = append(lose, r)
	}
	for _, r := range lose {
		bucket, part := pp(r)
		body, err := p.get(ctx, bucket, part+layout.ManifestName)
		if err != nil {
			return err
		}
		m, err := manifest.Decode(body)
		if err != nil {
			return err
		}
		store := p.bucketNamed(bucket)
		if err := store.Delete(ctx, m.Files[0].Key); err != nil {
			return err
		}
		want = append(want, part+": "+strings.TrimPrefix(m.Files[0].Key, part)+": listed in the manifest but missing")
		a0 := p.account(r.AccountID)
		prefix0, _ := a0.Prefix(p.stage)
		changeKey := layout.ChangeKey(prefix0, m.FinishedAt, r.Dataset, r.Day, m.Generation)
		if err := store.Delete(ctx, changeKey); err != nil {
			return err
		}
		want = append(want, fmt.Sprintf("%s: generation %d committed, 0 change-log entries, want 1", r.Key, m.Generation))
	}
	// An upload nobody finished.
	bucket, part := pp(picked[1])
	if _, err := p.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String(part + "part-00099.parquet")}); err != nil {
		return err
	}
	want = append(want, part+"part-00099.parquet: incomplete multipart upload")
	// A generation committed twice.
	_, part = pp(picked[2])
	p.faults.commit(Commit{Partition: part, Generation: picked[2].Generation, RunID: "run_forged"})
	want = append(want, fmt.Sprintf("%s: generation %d committed by two runs", part, picked[2].Generation))
	// A delivery manifest that disagrees with the ledger, on a day whose
	// partitions stay completed.
	other := picked[2]
	for _, r := range rows {
		if r.AccountID != picked[1].AccountID || r.Day != picked[1].Day {
			other = r
			break
		}
	}
	a := p.account(other.AccountID)
	prefix, _ := a.Prefix(p.stage)
	key := layout.DeliveryManifestKey(prefix, other.Day)
	body, err := p.get(ctx, a.Destination.Bucket, key)
	if err != nil {
		return err
	}
	stale := strings.Replace(string(body), `"complete": true`, `"complete": false`, 1)
	if _, err := p.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &a.Destination.Bucket, Key: &key, Body: strings.NewReader(stale)}); err != nil {
		return err
	}
	want = append(want, key+": complete false, the ledger says true")
	// A partition left queued.
	r := picked[1]
	if _, err := p.led.Partitions().Requeue(ctx, ledger.RequeueRange{AccountID: r.AccountID, Dataset: r.Dataset, From: r.Day, To: r.Day, Reason: partition.ReasonManual}); err != nil {
		return err
	}
	want = append(want, r.Key.String()+": not completed (queued)")

	broken, err := p.breakTables(ctx, picked[1:2]) // picked[1] is requeued above
	if err != nil {
		return err
	}
	want = append(want, broken...)

	foreign, err := p.plantForeign(ctx)
	if err != nil {
		return err
	}
	want = append(want, foreign...)

	kept, checked, races := p.rep.Problems, p.rep.Checked, p.rep.Accounts
	p.rep.Problems = nil
	err = p.check(ctx)
	found := p.rep.Problems
	p.rep.Problems, p.rep.Checked, p.rep.Accounts = kept, checked, races
	if err != nil {
		return err
	}
	all := strings.Join(found, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			return fmt.Errorf("chaos self-test: the check missed %q; it reported:\n%s", w, all)
		}
	}
	p.rep.SelfTest = len(want)
	return nil
}

// maxGet bounds what the check reads of one object (the big day's file is
// tens of MiB).
const maxGet = 1 << 30

// get reads an object of any account's bucket, on its store.
func (p *pipeline) get(ctx context.Context, bucket, key string) ([]byte, error) {
	return p.bucketNamed(bucket).Get(ctx, key, maxGet)
}
