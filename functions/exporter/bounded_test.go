package main

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/layout"
)

// testReadLimit is the most bytes a test reads back of an object it wrote.
const testReadLimit = 64 << 20

// TestBeginRefusesAnOversizedSuccess: the partition's old _SUCCESS is in
// the tenant's bucket, so it is read with manifest.MaxSuccessBytes: a
// planted 64 MiB one (valid JSON, padded) fails Begin with an error naming
// the key and the limit, allocates nothing near its size, and is left in
// place (nothing is noted, nothing deleted).
func TestBeginRefusesAnOversizedSuccess(t *testing.T) {
	const size = 64 << 20
	f := newCommitFixture(t)
	ctx := t.Context()
	planted := append([]byte(`{"generation":7}`), bytes.Repeat([]byte(" "), size)...)
	if err := f.b.Put(ctx, commitPP+layout.SuccessName, planted, "application/json"); err != nil {
		t.Fatal(err)
	}
	planted = nil
	var noted []int64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := f.committer().Begin(ctx, 4, func(_ context.Context, g int64) error { noted = append(noted, g); return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, bucket.ErrTooLarge) {
		t.Fatalf("Begin = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{"s3://dest/" + commitPP + layout.SuccessName, "8192"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The in-memory store copies the object for the body it returns; the
	// read must add no more than about the limit to that.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+1<<20 {
		t.Errorf("Begin allocated %d bytes reading a %d-byte _SUCCESS", alloc, size)
	}
	if noted != nil {
		t.Errorf("noted %v from an unread marker", noted)
	}
	if _, err := f.b.Head(ctx, commitPP+layout.SuccessName); err != nil {
		t.Errorf("the marker was removed: %v", err)
	}
}
