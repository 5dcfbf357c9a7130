package icetable

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// TestRebuildRepairsABrokenTable: an empty newest metadata file (another
// tool's, or planted) makes every commit refuse the table as broken,
// naming that file, and no retry changes it. Rebuild writes the next
// version as a new table of exactly the delivered days, in the metadata
// folder only; the broken file stays, unread; table commits go on from it.
func TestRebuildRepairsABrokenTable(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	d1 := w.export(day1, 1, 2, 20)
	mustAdd(t, tb, d1)
	mustAdd(t, tb, w.export(day2, 1, 1, 20))
	n := VersionOf(w.load().MetadataLocation())
	empty := MetadataKey(tb.Location, n+1)
	if err := w.b.Put(w.ctx, empty, nil, "application/json"); err != nil {
		t.Fatal(err)
	}
	d2 := w.export(day2, 2, 1, 30) // the day's next generation, delivered while broken
	for range 2 {
		_, err := tb.Add(w.ctx, d2)
		if be := (*BrokenError)(nil); !errors.As(err, &be) || be.Key != empty || !strings.Contains(err.Error(), "parse table metadata") {
			t.Fatalf("a table commit to the broken table: %v; want a BrokenError naming %s", err, empty)
		}
	}
	if _, err := Load(w.ctx, w.b, tb.Location); !errors.Is(err, ErrBroken) {
		t.Fatalf("load: %v", err)
	}
	keys := w.writes(func() {
		r, err := tb.Rebuild(w.ctx, n+1, []Committed{d1, d2})
		if err != nil || r.Version != n+2 {
			t.Fatalf("rebuild: version %d, %v", r.Version, err)
		}
	})
	for _, k := range keys {
		if !strings.HasPrefix(k, tb.Location+"/"+MetadataDir+"/") {
			t.Errorf("the rebuild wrote %s, outside the table's metadata folder", k)
		}
	}
	w.check(day1, day2)
	tbl := w.load()
	if VersionOf(tbl.MetadataLocation()) != n+2 || first(tbl) != "" {
		t.Fatalf("the rebuilt table is %s with log %v", tbl.MetadataLocation(), first(tbl))
	}
	if got := tbl.CurrentSnapshot().Summary.Properties; got[PropOperation] != "repair" || got[PropRepairedAfter] == "" {
		t.Fatalf("the repair's snapshot: %v", got)
	}
	if b, err := w.b.Get(w.ctx, empty, 10); err != nil || len(b) != 0 {
		t.Fatalf("the broken file: %q, %v; want it left as it was", b, err)
	}
	// The table goes on from the rebuilt version.
	mustAdd(t, tb, w.export(day2.AddDays(1), 1, 1, 10))
	w.check(day1, day2, day2.AddDays(1))
	// A version written meanwhile: nothing is written.
	if _, err := tb.Rebuild(w.ctx, n+1, []Committed{d1}); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("a rebuild over an existing version: %v", err)
	}
	w.check(day1, day2, day2.AddDays(1))
}

func first(tbl *table.Table) string {
	for e := range tbl.Metadata().PreviousFiles() {
		return e.MetadataFile
	}
	return ""
}

// TestTableCommitOfAnotherFolderIsRefused: a table commit (or a rebuild) whose
// files are not data files of its day's folder (a forged _manifest.json
// naming another day's, dataset's or account's files) commits nothing.
func TestTableCommitOfAnotherFolderIsRefused(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	d := w.export(day1, 1, 1, 10)
	for _, key := range []string{
		layout.DataKey(otherPrefix, w.ds.Name, day1, 0, ".parquet"),
		layout.DataKey(prefix, w.ds.Name, day2, 0, ".parquet"),
		layout.ManifestKey(prefix, w.ds.Name, day1),
		tb.Location + "/dt=" + day1.String() + "/../dt=" + day2.String() + "/part-00000.parquet",
	} {
		forged := d
		forged.Files = []manifest.File{{Key: key, Rows: 10, Bytes: d.Files[0].Bytes}}
		if _, err := tb.Add(w.ctx, forged); !errors.Is(err, ErrNotInFolder) {
			t.Errorf("a table commit of %s: %v; want ErrNotInFolder", key, err)
		}
		if _, err := tb.Rebuild(w.ctx, 0, []Committed{forged}); !errors.Is(err, ErrNotInFolder) {
			t.Errorf("a rebuild of %s: %v; want ErrNotInFolder", key, err)
		}
	}
	if _, err := Load(w.ctx, w.b, tb.Location); !errors.Is(err, ErrNoTable) {
		t.Fatalf("after refused table commits: %v; want no table", err)
	}
}
