package icetable

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// otherPrefix is a second account's prefix in the same bucket.
const otherPrefix = "tenant/bob"

// trick is planted Iceberg metadata: an edit of the table's current
// metadata file, written as the next version (with its hint) by someone
// who can write to the account's prefix.
type trick struct {
	name string
	edit func(w *world, m map[string]any, other []string)
	// broken: the table is refused (ErrBroken, naming the planted file);
	// otherwise daybook's properties replace the planted ones and the
	// table commit commits.
	broken bool
}

// tricks are the planted metadata files that reached outside the table
// before: each names the other account's objects as something daybook's
// commit deletes, or makes it write into the other account's folder.
var tricks = []trick{
	{"metadata log deleted after commit", func(w *world, m map[string]any, other []string) {
		props := m["properties"].(map[string]any)
		props["write.metadata.delete-after-commit.enabled"] = "true"
		props["write.metadata.previous-versions-max"] = "1"
		var log []any
		for _, k := range other {
			log = append(log, map[string]any{"timestamp-ms": 1000, "metadata-file": "s3://" + w.b.Name() + "/" + k})
		}
		m["metadata-log"] = log
	}, true},
	{"expired snapshot's manifest list", func(w *world, m map[string]any, other []string) {
		snaps := m["snapshots"].([]any)
		for i, k := range other {
			snaps = append(snaps, map[string]any{"snapshot-id": 4200 + i, "timestamp-ms": 1000 + i, "sequence-number": 0,
				"manifest-list": "s3://" + w.b.Name() + "/" + k, "summary": map[string]any{"operation": "append"}, "schema-id": 0})
		}
		m["snapshots"] = snaps
	}, true},
	{"metadata path elsewhere", func(w *world, m map[string]any, _ []string) {
		m["properties"].(map[string]any)["write.metadata.path"] = "s3://" + w.b.Name() + "/" + otherPrefix + "/v1/events/metadata"
	}, false},
	{"location elsewhere", func(w *world, m map[string]any, _ []string) {
		m["location"] = "s3://" + w.b.Name() + "/" + otherPrefix + "/v1/events"
	}, true},
	{"its own log deleted after commit, retried at will", func(w *world, m map[string]any, _ []string) {
		props := m["properties"].(map[string]any)
		props["write.metadata.delete-after-commit.enabled"] = "true"
		props["write.metadata.previous-versions-max"] = "1"
		props["commit.retry.num-retries"] = "100000"
		props["commit.manifest-merge.enabled"] = "false"
		props["history.expire.max-ref-age-ms"] = "1"
		props["comment"] = "a property daybook does not own stays"
	}, false},
	{"a dot-dot manifest list", func(w *world, m map[string]any, _ []string) {
		snaps := m["snapshots"].([]any)
		snaps[0].(map[string]any)["manifest-list"] = "s3://" + w.b.Name() + "/" + w.table().Location + "/metadata/../../../../bob/v1/events/dt=2026-03-01/_SUCCESS.avro"
	}, true},
	{"another bucket", func(w *world, m map[string]any, _ []string) {
		m["metadata-log"] = []any{map[string]any{"timestamp-ms": 1000, "metadata-file": "s3://another-bucket/" + w.table().Location + "/metadata/v1.metadata.json"}}
	}, true},
}

// otherAccount writes a second account's committed day (a part file, its
// _manifest.json and _SUCCESS) and its own table into the bucket, and
// returns its keys.
func (w *world) otherAccount() []string {
	w.t.Helper()
	body, err := w.b.Get(w.ctx, layout.DataKey(prefix, w.ds.Name, day1, 0, ".parquet"), 1<<20)
	if err != nil {
		w.t.Fatal(err)
	}
	part := layout.DataKey(otherPrefix, w.ds.Name, day1, 0, ".parquet")
	for k, v := range map[string][]byte{part: body, layout.ManifestKey(otherPrefix, w.ds.Name, day1): []byte(`{"account_id":"bob"}`),
		layout.SuccessKey(otherPrefix, w.ds.Name, day1): []byte("bob's _SUCCESS")} {
		if err := w.b.Put(w.ctx, k, v, ""); err != nil {
			w.t.Fatal(err)
		}
	}
	theirs := &Table{Store: w.b, Location: otherPrefix + "/v1/" + w.ds.Name, Dataset: w.ds}
	mustAdd(w.t, theirs, Committed{Day: day1, Generation: 1, ManifestKey: layout.ManifestKey(otherPrefix, w.ds.Name, day1),
		Files: []manifest.File{{Key: part, Rows: int64(len(w.ids[day1])), Bytes: int64(len(body))}}})
	objs, err := w.b.List(w.ctx, otherPrefix+"/", 10_000)
	if err != nil {
		w.t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// digest is every object under prefix with a hash of its body.
func (w *world) digest(p string) map[string][32]byte {
	w.t.Helper()
	objs, err := w.b.List(w.ctx, p, 100_000)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, o := range objs {
		b, err := w.b.Get(w.ctx, o.Key, 64<<20)
		if err != nil {
			w.t.Fatal(err)
		}
		out[o.Key] = sha256.Sum256(b)
	}
	return out
}

// plant writes the table's current metadata file, edited, as the next
// version, and points the hint at it; it returns the planted key.
func (w *world) plant(edit func(m map[string]any)) string {
	w.t.Helper()
	loc := w.table().Location
	hint, err := w.b.Get(w.ctx, VersionHintKey(loc), 64)
	if err != nil {
		w.t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hint)))
	if err != nil {
		w.t.Fatal(err)
	}
	body, err := w.b.Get(w.ctx, MetadataKey(loc, n), 8<<20)
	if err != nil {
		w.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		w.t.Fatal(err)
	}
	edit(m)
	if body, err = json.Marshal(m); err != nil {
		w.t.Fatal(err)
	}
	key := MetadataKey(loc, n+1)
	if err := w.b.Put(w.ctx, key, body, "application/json"); err != nil {
		w.t.Fatal(err)
	}
	if err := w.b.Put(w.ctx, VersionHintKey(loc), []byte(strconv.Itoa(n+1)), "text/plain"); err != nil {
		w.t.Fatal(err)
	}
	return key
}

// writes records the keys every write and delete names while it runs.
func (w *world) writes(f func()) []string {
	var mu sync.Mutex
	var keys []string
	w.faults.Set(func(c buckettest.Call) error {
		switch c.Op {
		case buckettest.OpPut, buckettest.OpDelete, buckettest.OpCreate, buckettest.OpComplete:
			mu.Lock()
			keys = append(keys, c.Key)
			mu.Unlock()
		case buckettest.OpDeleteObjects:
			mu.Lock()
			keys = append(keys, c.Keys...)
			mu.Unlock()
		}
		return nil
	}, nil)
	defer w.faults.Set(nil, nil)
	f()
	return keys
}

// TestPlantedMetadataStaysInTheTable: two accounts share a bucket under
// separate prefixes. Metadata planted as the next version of the first
// account's table (each trick) makes that account's next table commit neither
// delete nor change any object of the other account, nor write anything
// outside its table's metadata/ folder. Before, a planted metadata log with
// delete-after-commit deleted the other account's _SUCCESS and part file,
// an expired snapshot's manifest list did the same, and a planted
// write.metadata.path or location wrote the table's files into the other
// account's folder.
func TestPlantedMetadataStaysInTheTable(t *testing.T) {
	for _, tr := range tricks {
		t.Run(tr.name, func(t *testing.T) {
			w := newWorld(t, true)
			tb := w.table()
			mustAdd(t, tb, w.export(day1, 1, 1, 20))
			mustAdd(t, tb, w.export(day2, 1, 1, 20))
			other := w.otherAccount()
			before := w.digest(otherPrefix + "/")
			planted := w.plant(func(m map[string]any) { tr.edit(w, m, other) })
			d := w.export(day2.AddDays(1), 1, 1, 20)
			var err error
			keys := w.writes(func() { _, err = tb.Add(w.ctx, d) })
			t.Logf("planted %s; the table commit: %v", planted, err)
			if tr.broken {
				if be := (*BrokenError)(nil); !errors.As(err, &be) || !errors.Is(err, ErrOutsideTable) || be.Key != planted {
					t.Errorf("the table commit: %v; want a BrokenError (ErrOutsideTable) naming %s", err, planted)
				}
			} else {
				if err != nil {
					t.Fatalf("the table commit: %v; want daybook's properties in place of the planted ones", err)
				}
				w.check(day1, day2, d.Day)
				props := w.load().Properties()
				if !maps.Equal(props, daybookProperties(props)) || props[table.WriteMetadataPathKey] != "" || props[table.CommitNumRetriesKey] != "0" {
					t.Errorf("the committed properties %v are not daybook's", props)
				}
			}
			after := w.digest(otherPrefix + "/")
			for k, h := range before {
				if g, ok := after[k]; !ok {
					t.Errorf("the other account's %s was deleted", k)
				} else if g != h {
					t.Errorf("the other account's %s was changed", k)
				}
			}
			for k := range after {
				if _, ok := before[k]; !ok {
					t.Errorf("%s was written into the other account's folder", k)
				}
			}
			for _, k := range keys {
				if !strings.HasPrefix(k, tb.Location+"/"+MetadataDir+"/") {
					t.Errorf("the table commit wrote or deleted %s, outside the table's metadata folder", k)
				}
			}
		})
	}
}

// TestStoreFailureIsNotBroken: a request to the store that fails (the
// metadata write, a manifest list's or the metadata's read) fails the
// commit as it is, to be retried; only what the bucket holds makes a
// table broken.
func TestStoreFailureIsNotBroken(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	mustAdd(t, tb, w.export(day1, 1, 1, 10))
	for _, c := range []struct {
		what string
		op   buckettest.Op
		key  string
	}{
		{"the metadata write", buckettest.OpPut, ".metadata.json"},
		{"a manifest list's read", buckettest.OpGet, "/snap-"},
		{"the metadata's read", buckettest.OpGet, ".metadata.json"},
	} {
		down := errors.New("connection reset by peer")
		w.faults.Set(func(call buckettest.Call) error {
			if call.Op == c.op && strings.Contains(call.Key, c.key) {
				return down
			}
			return nil
		}, nil)
		_, err := tb.Add(w.ctx, w.export(day2, 1, 1, 10))
		w.faults.Set(nil, nil)
		if err == nil || errors.Is(err, ErrBroken) || !errors.Is(err, down) {
			t.Errorf("%s failing: %v; want the store's error, not a broken table", c.what, err)
		}
	}
	mustAdd(t, tb, w.export(day2, 1, 1, 10))
	w.check(day1, day2)
}
