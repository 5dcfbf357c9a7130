package chaos

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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
	var picked []ledger.Row // three completed partitions with data, of three datasets
	for _, r := range rows {
		if r.State == ledger.StateCompleted && r.Rows > 0 && (len(picked) == 0 || picked[len(picked)-1].Dataset != r.Dataset) {
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
	// A data file lost.
	bucket, part := pp(picked[0])
	body, err := p.get(ctx, bucket, part+layout.ManifestName)
	if err != nil {
		return err
	}
	m, err := manifest.Decode(body)
	if err != nil {
		return err
	}
	if _, err := p.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &m.Files[0].Key}); err != nil {
		return err
	}
	want = append(want, part+": "+strings.TrimPrefix(m.Files[0].Key, part)+": listed in the manifest but missing")
	// Its change-log entry lost.
	a0 := p.account(picked[0].AccountID)
	prefix0, _ := a0.Prefix(p.stage)
	changeKey := layout.ChangeKey(prefix0, m.FinishedAt, picked[0].Dataset, picked[0].Day, m.Generation)
	if _, err := p.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &changeKey}); err != nil {
		return err
	}
	want = append(want, fmt.Sprintf("%s: generation %d committed, 0 change-log entries, want 1", picked[0].Key, m.Generation))
	// An upload nobody finished.
	bucket, part = pp(picked[1])
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
	if body, err = p.get(ctx, a.Destination.Bucket, key); err != nil {
		return err
	}
	stale := strings.Replace(string(body), `"complete": true`, `"complete": false`, 1)
	if _, err := p.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &a.Destination.Bucket, Key: &key, Body: strings.NewReader(stale)}); err != nil {
		return err
	}
	want = append(want, key+": complete false, the ledger says true")
	// A partition left queued.
	r := picked[1]
	if _, err := p.led.Partitions().Requeue(ctx, r.AccountID, r.Dataset, r.Day, r.Day, partition.ReasonManual); err != nil {
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

func (p *pipeline) get(ctx context.Context, bucket, key string) ([]byte, error) {
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}
