package console

import (
	"bytes"
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
