package console

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// TestPartitionPageReadsBounded: the partition page reads the bucket's
// documents through bucket.Get with their limits, so a _SUCCESS padded past
// manifest.MaxSuccessBytes (valid JSON all the same) is reported as a
// problem naming the key and the limit, not read whole and shown.
func TestPartitionPageReadsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	store := buckettest.NewFake("daybook-exports-test")
	b := bucket.New(store, "daybook-exports-test", bucket.Options{})
	for k, v := range f.bucket.objects {
		if err := b.Put(t.Context(), k, v, ""); err != nil {
			t.Fatal(err)
		}
	}
	key := layout.SuccessKey("daybook/"+troubled, "events", day("2026-11-24"))
	padded := append([]byte(`{"generation":2}`), bytes.Repeat([]byte(" "), manifest.MaxSuccessBytes)...)
	if err := b.Put(t.Context(), key, padded, ""); err != nil {
		t.Fatal(err)
	}
	f.srv.cfg.Buckets = BucketsFunc(func(account.Account) (ObjectReader, error) { return b, nil })
	res := f.get("/accounts/" + troubled + "/partitions/events/2026-11-24")
	if res.code != http.StatusOK {
		t.Fatalf("status %d\n%s", res.code, res.body)
	}
	wantContains(t, res.body, "s3://daybook-exports-test/"+key+" is larger than daybook ever writes it, so it was not read", "object too large", "8192")
	if strings.Contains(res.body, "<code>_SUCCESS</code> names generation 2") {
		t.Error("the oversized _SUCCESS was read and shown")
	}
}

// recordingBucket records every key the console reads.
type recordingBucket struct {
	fakeBucket
	keys *[]string
}

func (b recordingBucket) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	*b.keys = append(*b.keys, key)
	return b.fakeBucket.Get(ctx, key, limit)
}

// TestPartitionPageDoesNotTrustAPlantedManifest: a _SUCCESS and a
// _manifest.json planted in the account's partition, committing a manifest
// that names another account and lists another account's file, are said to
// be no manifest of the partition; the page shows neither the other
// account nor its key as this partition's, and reads nothing but the
// partition's _SUCCESS and manifest and the day's delivery manifest.
func TestPartitionPageDoesNotTrustAPlantedManifest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	prefix := "daybook/" + troubled
	d := day("2026-11-24")
	mkey := layout.ManifestKey(prefix, "events", d)
	const elsewhere = "daybook/acct_someoneelse222/v1/events/dt=2026-11-24/part-00000.parquet"
	m := &manifest.Manifest{FormatVersion: manifest.FormatVersion, Contract: layout.Version, AccountID: "acct_someoneelse222", Dataset: "events",
		Day: "2026-11-24", Generation: 7, Files: []manifest.File{{Key: elsewhere, Rows: 5, Bytes: 99}}}
	m.Sum()
	mb, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f.bucket.objects[mkey] = mb
	f.bucket.objects[layout.SuccessKey(prefix, "events", d)] = manifest.NewSuccess(7, "run_planted", mkey, mb, testNow).Encode()
	var keys []string
	f.srv.cfg.Buckets = BucketsFunc(func(account.Account) (ObjectReader, error) { return recordingBucket{f.bucket, &keys}, nil })
	res := f.get("/accounts/" + troubled + "/partitions/events/2026-11-24")
	if res.code != http.StatusOK {
		t.Fatalf("status %d\n%s", res.code, res.body)
	}
	wantContains(t, res.body, "the manifest is not this partition", "account_id &#34;acct_someoneelse222&#34;", "do not read the partition")
	if strings.Contains(res.body, `<code class="key">`+elsewhere) {
		t.Error("the planted manifest's file is shown as the partition's")
	}
	for _, k := range keys {
		if k != mkey && k != layout.SuccessKey(prefix, "events", d) && k != layout.DeliveryManifestKey(prefix, d) {
			t.Errorf("the page read %s", k)
		}
	}
}
