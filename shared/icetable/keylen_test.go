package icetable

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// TestPrefixAtTheKeyLimitWritesTheTable: an account whose prefix makes
// its longest key exactly S3's 1,024 bytes is accepted when it is saved,
// and its table then writes every file it needs within them (the bucket
// refuses a longer key, as S3 does), also when the table's metadata asks
// the library to retry a conflicting commit a thousand times (each retry
// would number a rebuilt manifest list snap-<id>-<attempt>-<uuid>.avro,
// past the name layout counts at attempt 1000). daybook's properties
// replace the planted ones: the library does not retry, daybook's own
// retry reloads. Before, layout already counted the table's names (the
// key check passed on add169e), but the planted retries made the library
// try the conflicting metadata write 1,100 times.
func TestPrefixAtTheKeyLimitWritesTheTable(t *testing.T) {
	const id = "acct_abcdefghijklmnop"
	datasets := []string{"events"}
	suffix := len(layout.LongestKey("x", datasets)) - len("x")
	acct := account.Account{ID: id, Name: "at the limit", Enabled: true, StartDate: day1, Datasets: datasets,
		Destination: account.Destination{Bucket: "acme-exports", RoleARN: "arn:aws:iam::123456789012:role/daybook-export-acme", ExternalID: "ext-1",
			Prefix: strings.Repeat("p", layout.MaxKeyBytes-suffix-len("/"+id)) + "/{{.AccountID}}", TableFormat: account.TableFormatIceberg}}
	if err := acct.Validate(datasettest.Example(t), account.Rules{}); err != nil {
		t.Fatalf("an account at the key limit is refused: %v", err)
	}
	p, err := acct.Prefix("stage")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(layout.LongestKey(p, datasets)); n != layout.MaxKeyBytes {
		t.Fatalf("the longest key is %d bytes, want %d", n, layout.MaxKeyBytes)
	}

	w := newWorld(t, true)
	var mu sync.Mutex
	longest := ""
	limit := func(c buckettest.Call) error {
		if c.Op != buckettest.OpPut && c.Op != buckettest.OpCreate {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if len(c.Key) > len(longest) {
			longest = c.Key
		}
		if len(c.Key) > layout.MaxKeyBytes {
			return &smithy.GenericAPIError{Code: "KeyTooLongError", Message: "Your key is too long"}
		}
		return nil
	}
	w.faults.Set(limit, nil)
	tb := &Table{Store: w.b, Location: strings.TrimSuffix(layout.DatasetPrefix(p, "events"), "/"), Dataset: w.ds}
	// A day's files, at the account's keys.
	add := func(day civil.Date) Committed {
		t.Helper()
		src := w.export(day, 1, 1, 10)
		body, err := w.b.Get(w.ctx, src.Files[0].Key, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		key := layout.DataKey(p, "events", day, 0, ".parquet")
		if err := w.b.Put(w.ctx, key, body, ""); err != nil {
			t.Fatal(err)
		}
		return Committed{Day: day, Generation: 1, ManifestKey: layout.ManifestKey(p, "events", day),
			Files: []manifest.File{{Key: key, Rows: 10, Bytes: int64(len(body))}}}
	}
	mustAdd(t, tb, add(day1))
	// Another tool's metadata asks for a thousand retries of a conflicting
	// commit, at once.
	n, err := strconv.Atoi(strings.TrimSpace(string(must(w.b.Get(w.ctx, VersionHintKey(tb.Location), 64)))))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(must(w.b.Get(w.ctx, MetadataKey(tb.Location, n), 1<<20)), &m); err != nil {
		t.Fatal(err)
	}
	props := m["properties"].(map[string]any)
	props["commit.retry.num-retries"], props["commit.retry.min-wait-ms"], props["commit.retry.max-wait-ms"] = "1100", "1", "1"
	body, _ := json.Marshal(m)
	if err := w.b.Put(w.ctx, MetadataKey(tb.Location, n+1), body, "application/json"); err != nil {
		t.Fatal(err)
	}
	dA, dB := add(day2), add(day2.AddDays(1))
	other := false
	var bErr error
	puts := 0
	w.faults.Set(func(c buckettest.Call) error {
		if err := limit(c); err != nil {
			return err
		}
		if c.Op == buckettest.OpPut && strings.HasSuffix(c.Key, ".metadata.json") {
			puts++
			if !other {
				other = true
				_, bErr = tb.Add(w.ctx, dB)
			}
		}
		return nil
	}, nil)
	_, err = tb.Add(w.ctx, dA)
	w.faults.Set(nil, nil)
	if err != nil || bErr != nil {
		t.Fatalf("at the key limit: %v; the other writer: %v", err, bErr)
	}
	t.Logf("the longest key written is %d bytes: %s; %d metadata writes", len(longest), longest[strings.LastIndexByte(longest, '/')+1:], puts)
	// The conflict costs one more commit (daybook's own retry, reloading),
	// not the thousand the metadata asked of the library.
	if puts > 4 {
		t.Errorf("%d metadata writes for two commits and one conflict", puts)
	}
	if len(longest) > layout.MaxKeyBytes {
		t.Fatalf("a key of %d bytes", len(longest))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
