package icetable

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
)

// currentList is the table's current snapshot's manifest list: its key and
// manifests.
func (w *world) currentList() (string, []iceberg.ManifestFile) {
	w.t.Helper()
	s := w.load().CurrentSnapshot()
	ms, err := s.Manifests(w.fs())
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimPrefix(s.ManifestList, "s3://"+w.b.Name()+"/"), ms
}

// putList writes a manifest list of files at the key name in the table's
// metadata folder and returns its URI.
func (w *world) putList(name string, files []iceberg.ManifestFile) string {
	w.t.Helper()
	var buf bytes.Buffer
	seq := int64(1)
	if err := iceberg.WriteManifestList(2, &buf, 1, nil, &seq, 0, files); err != nil {
		w.t.Fatal(err)
	}
	key := w.table().Location + "/" + MetadataDir + "/" + name
	if err := w.b.Put(w.ctx, key, buf.Bytes(), "avro/binary"); err != nil {
		w.t.Fatal(err)
	}
	return "s3://" + w.b.Name() + "/" + key
}

// asCurrentList plants metadata whose current snapshot's manifest list is
// list.
func (w *world) asCurrentList(list string) string {
	return w.plant(func(m map[string]any) {
		cur := m["current-snapshot-id"]
		for _, s := range m["snapshots"].([]any) {
			if s := s.(map[string]any); s["snapshot-id"] == cur {
				s["manifest-list"] = list
			}
		}
	})
}

// addBroken delivers day 3 and wants the table refused as broken
// with want, the error naming the object and the limit.
func (w *world) addBroken(tb *Table, want error, key string, limit int64) {
	w.t.Helper()
	_, err := tb.Add(w.ctx, w.export(day2.AddDays(1), 1, 1, 10))
	if !errors.Is(err, ErrBroken) || !errors.Is(err, want) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), strconv.FormatInt(limit, 10)) {
		w.t.Fatalf("the table commit: %v; want %v naming %s and the limit %d", err, want, key, limit)
	}
	w.t.Logf("refused: %v", err)
}

// TestTableReadsAreBounded: a commit reads a bounded number of manifest
// lists and manifests and a bounded size of each, whatever the metadata in
// the bucket says; past a bound the table is broken (ErrTableLimit), with
// the object and the limit named. Before, only each object's size was
// bounded: a manifest list naming 600 manifests made one commit read all
// 600, and 100 planted expired snapshots made it read 101 manifest lists.
func TestTableReadsAreBounded(t *testing.T) {
	t.Run("manifests", func(t *testing.T) {
		w := newWorld(t, true)
		tb := w.table()
		mustAdd(t, tb, w.export(day1, 1, 1, 10))
		_, ms := w.currentList()
		var many []iceberg.ManifestFile
		for range DefaultLimits.Manifests + 88 {
			many = append(many, ms[0])
		}
		list := w.putList("snap-1-0-many.avro", many)
		w.asCurrentList(list)
		gets := w.faults.Count(buckettest.OpGet)
		w.addBroken(tb, ErrTableLimit, ms[0].FilePath(), int64(DefaultLimits.Manifests))
		if n := w.faults.Count(buckettest.OpGet) - gets; n > DefaultLimits.Manifests+20 {
			t.Fatalf("%d reads", n)
		}
	})
	t.Run("expired snapshots' manifest lists", func(t *testing.T) {
		w := newWorld(t, true)
		tb := w.table()
		mustAdd(t, tb, w.export(day1, 1, 1, 10))
		_, ms := w.currentList()
		var lists []string
		for i := range 100 {
			lists = append(lists, w.putList(fmt.Sprintf("snap-%d-0-planted.avro", 900+i), ms))
		}
		w.plant(func(m map[string]any) {
			snaps := m["snapshots"].([]any)
			for i, l := range lists {
				snaps = append(snaps, map[string]any{"snapshot-id": 900 + i, "timestamp-ms": 1000 + i, "sequence-number": 0,
					"manifest-list": l, "summary": map[string]any{"operation": "append"}, "schema-id": 0})
			}
			m["snapshots"] = snaps
		})
		var listReads int
		w.faults.Set(func(c buckettest.Call) error {
			if c.Op == buckettest.OpGet && strings.Contains(c.Key, "/snap-") {
				listReads++
			}
			return nil
		}, nil)
		mustAdd(t, tb, w.export(day2, 1, 1, 10))
		w.faults.Set(nil, nil)
		if listReads > DefaultLimits.ManifestLists {
			t.Fatalf("one commit read %d manifest lists; the limit is %d", listReads, DefaultLimits.ManifestLists)
		}
		w.check(day1, day2)
	})
	t.Run("a large metadata file", func(t *testing.T) {
		w := newWorld(t, true)
		tb := w.table()
		tb.Limits = Limits{MetadataBytes: 64 << 10}
		mustAdd(t, tb, w.export(day1, 1, 1, 10))
		key := w.plant(func(m map[string]any) { m["properties"].(map[string]any)["padding"] = strings.Repeat("x", 64<<10) })
		w.addBroken(tb, ErrTableLimit, key, 64<<10)
	})
	t.Run("too many snapshots", func(t *testing.T) {
		w := newWorld(t, true)
		tb := w.table()
		tb.Limits = Limits{Snapshots: 3}
		mustAdd(t, tb, w.export(day1, 1, 1, 10))
		mustAdd(t, tb, w.export(day2, 1, 1, 10))
		key := w.plant(func(m map[string]any) {
			snaps := m["snapshots"].([]any)
			for i := range 3 {
				s := map[string]any{}
				for k, v := range snaps[0].(map[string]any) {
					s[k] = v
				}
				s["snapshot-id"], s["parent-snapshot-id"] = 700+i, nil
				snaps = append(snaps, s)
			}
			m["snapshots"] = snaps
		})
		w.addBroken(tb, ErrTableLimit, key, 3)
	})
	t.Run("a large manifest list", func(t *testing.T) {
		w := newWorld(t, true)
		tb := w.table()
		tb.Limits = Limits{ObjectBytes: 64 << 10}
		mustAdd(t, tb, w.export(day1, 1, 1, 10))
		key := w.table().Location + "/" + MetadataDir + "/snap-1-0-large.avro"
		large := make([]byte, 65<<10)
		for i := range large {
			large[i] = byte(i * 7919 >> 3)
		}
		if err := w.b.Put(w.ctx, key, large, "avro/binary"); err != nil {
			t.Fatal(err)
		}
		w.asCurrentList("s3://" + w.b.Name() + "/" + key)
		w.addBroken(tb, ErrTableLimit, key, 64<<10)
	})
}

// bomb is an Avro object container file of blocks blocks, each one record
// of a bytes value of n zero bytes, deflated: a few KB that decompress to
// blocks × n bytes.
func bomb(t *testing.T, blocks, n int) []byte {
	t.Helper()
	var raw bytes.Buffer
	raw.Write(binary.AppendVarint(nil, int64(n)))
	raw.Write(make([]byte, n))
	var z bytes.Buffer
	fw, err := flate.NewWriter(&z, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	sync := bytes.Repeat([]byte{0xd5}, 16)
	var out bytes.Buffer
	out.Write(avroMagic)
	str := func(s string) { out.Write(binary.AppendVarint(nil, int64(len(s)))); out.WriteString(s) }
	out.Write(binary.AppendVarint(nil, 2))
	str("avro.schema")
	str(`"bytes"`)
	str("avro.codec")
	str("deflate")
	out.Write(binary.AppendVarint(nil, 0))
	out.Write(sync)
	for range blocks {
		out.Write(binary.AppendVarint(nil, 1))
		out.Write(binary.AppendVarint(nil, int64(z.Len())))
		out.Write(z.Bytes())
		out.Write(sync)
	}
	return out.Bytes()
}

// TestAvroBombIsRefused: a manifest list that is a decompression bomb
// (many deflate blocks, each within the Avro reader's own per-block bound,
// together past Limits.AvroDecodedBytes) is refused before the library
// decodes it (ErrAvroTooLarge naming the file and the limit).
func TestAvroBombIsRefused(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	mustAdd(t, tb, w.export(day1, 1, 1, 10))
	body := bomb(t, 12, 16<<20) // 192 MiB from a few hundred KB
	key := w.table().Location + "/" + MetadataDir + "/snap-1-0-bomb.avro"
	if err := w.b.Put(w.ctx, key, body, "avro/binary"); err != nil {
		t.Fatal(err)
	}
	t.Logf("the bomb is %d bytes", len(body))
	w.asCurrentList("s3://" + w.b.Name() + "/" + key)
	w.addBroken(tb, ErrAvroTooLarge, key, DefaultLimits.AvroDecodedBytes)
	// The check itself: each codec's decompressed size is counted, a
	// valid file within the limits passes.
	s := newScope(w.b, tb.Location, Limits{AvroDecodedBytes: 1 << 20})
	if err := s.checkAvro(key, bomb(t, 1, 1<<19)); err != nil {
		t.Fatalf("half the limit: %v", err)
	}
	if err := s.checkAvro(key, bomb(t, 3, 1<<19)); !errors.Is(err, ErrAvroTooLarge) {
		t.Fatalf("one and a half times the limit: %v", err)
	}
}
