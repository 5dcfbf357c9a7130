package buckettest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// testPutIfAbsent: create-if-absent writes where nothing is, refuses an
// existing object with ErrExists and leaves it as it was, and of writers
// racing for one key exactly one wins (the commit primitive of an Iceberg
// table: S3 and Azure If-None-Match: *, GCS ifGenerationMatch=0).
func testPutIfAbsent(t *testing.T, nb func(*testing.T) Backend) {
	h := newHarness(t, nb, bucket.Options{})
	const key = "t/metadata/v1.metadata.json"
	if err := h.b.PutIfAbsent(h.ctx, key, []byte(`{"v":1}`), "application/json"); err != nil {
		t.Fatal(err)
	}
	err := h.b.PutIfAbsent(h.ctx, key, []byte(`{"v":"other"}`), "application/json")
	if !errors.Is(err, bucket.ErrExists) || bucket.IsNotFound(err) {
		t.Fatalf("PutIfAbsent on an existing object = %v, want ErrExists", err)
	}
	if got := h.stored(key); string(got.Data) != `{"v":1}` || got.ContentType != "application/json" {
		t.Errorf("after a refused PutIfAbsent: %q %q", got.Data, got.ContentType)
	}
	const racers = 4
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			errs[i] = h.b.PutIfAbsent(h.ctx, "t/metadata/v2.metadata.json", fmt.Appendf(nil, `{"writer":%d}`, i), "application/json")
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("writers %d and %d both created the object", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, bucket.ErrExists):
			t.Errorf("writer %d: %v, want ErrExists", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer created the object")
	}
	if got := h.stored("t/metadata/v2.metadata.json"); string(got.Data) != fmt.Sprintf(`{"writer":%d}`, won) {
		t.Errorf("stored %q, the winner was writer %d", got.Data, won)
	}
}
