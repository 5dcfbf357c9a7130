package encode

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// TestParquetLogicalTypes checks the footer directly (F5), independently of
// how any one engine maps types.
func TestParquetLogicalTypes(t *testing.T) {
	ds, _ := dataset.Get("events")
	var buf bytes.Buffer
	w, _ := New(fileformat.Parquet, &buf, ds, Options{})
	for _, r := range edgeRows(ds) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	md := f.Metadata()
	if md.NumRows != 3 {
		t.Fatalf("NumRows = %d", md.NumRows)
	}
	elems := md.Schema[1:]
	if len(elems) != len(ds.Columns) {
		t.Fatalf("%d schema elements", len(elems))
	}
	for i, c := range ds.Columns {
		e := elems[i]
		if e.Name != c.Name {
			t.Errorf("column %d is %s, want %s", i, e.Name, c.Name)
		}
		wantRep := format.Required
		if c.Nullable {
			wantRep = format.Optional
		}
		if rep, _ := e.RepetitionType.Get(); rep != wantRep {
			t.Errorf("%s repetition %v", c.Name, rep)
		}
		phys, _ := e.Type.Get()
		ok := false
		switch lt := e.LogicalType.Value.(type) {
		case *format.TimestampType:
			_, micros := lt.Unit.Value.(*format.MicroSeconds)
			ok = c.Type.Kind == dataset.KindTimestamp && lt.IsAdjustedToUTC && micros && phys == format.Int64
		case *format.DecimalType:
			ok = c.Type.Kind == dataset.KindDecimal && lt.Precision == 18 && lt.Scale == 2 && phys == format.Int64
		case *format.JsonType:
			ok = c.Type.Kind == dataset.KindJSON && phys == format.ByteArray
		case *format.StringType:
			ok = c.Type.Kind == dataset.KindString && phys == format.ByteArray
		case nil:
			ok = c.Type.Kind == dataset.KindDouble && phys == format.Double ||
				c.Type.Kind == dataset.KindBoolean && phys == format.Boolean
		}
		if !ok {
			t.Errorf("column %s: element %+v", c.Name, e)
		}
	}
	// Encodings chosen from the schema: dictionary for event_type,
	// delta for timestamps.
	cc := md.RowGroups[0].Columns
	has := func(col int, enc format.Encoding) bool { return slices.Contains(cc[col].MetaData.Encoding, enc) }
	if !has(1, format.RLEDictionary) || !has(2, format.DeltaBinaryPacked) || has(0, format.RLEDictionary) {
		t.Errorf("encodings: event_id %v event_type %v occurred_at %v", cc[0].MetaData.Encoding, cc[1].MetaData.Encoding, cc[2].MetaData.Encoding)
	}
	kv := map[string]string{}
	for _, p := range md.KeyValueMetadata {
		kv[p.Key] = p.Value
	}
	if kv["daybook.dataset"] != "events" || kv["daybook.schema_version"] != "1" {
		t.Errorf("key/value metadata %v", kv)
	}
	ds2, _ := dataset.Get("daily_stats")
	s, _ := Schema(ds2, Options{})
	if lt := s.Fields()[0].Type().LogicalType(); lt == nil {
		t.Errorf("stat_date has no logical type")
	} else if _, ok := lt.Value.(*format.DateType); !ok {
		t.Errorf("stat_date logical type %v", lt)
	}
}

func TestRowGroupsBounded(t *testing.T) {
	ds, _ := dataset.Get("events")
	tests := []struct {
		name       string
		opts       Options
		rows       int
		flushAfter int
		wantGroups int
	}{
		{"row cap", Options{MaxRowGroupRows: 10}, 25, 0, 3},
		{"explicit flush", Options{}, 20, 7, 2},
		{"flush on exact boundary adds no empty group", Options{MaxRowGroupRows: 10}, 20, 20, 2},
		{"byte cap", Options{MaxRowGroupBytes: 1}, 3000, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, _ := New(fileformat.Parquet, &buf, ds, tt.opts)
			gen := newEventGen(1)
			for i := range tt.rows {
				if err := w.Write(gen.next()); err != nil {
					t.Fatal(err)
				}
				if i+1 == tt.flushAfter {
					if err := w.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.RowGroups()); n != tt.wantGroups || f.NumRows() != int64(tt.rows) {
				t.Fatalf("%d row groups, %d rows; want %d, %d", n, f.NumRows(), tt.wantGroups, tt.rows)
			}
		})
	}
}

func TestWriteRefusesBadRows(t *testing.T) {
	ds, _ := dataset.Get("events")
	good := func() []any { return newEventGen(1).next() }
	tests := []struct {
		name   string
		mutate func(r []any) []any
		want   string
	}{
		{"null required", func(r []any) []any { r[0] = nil; return r }, "column event_id: null in required column"},
		{"string for timestamp", func(r []any) []any { r[2] = "2026-11-28"; return r }, "column occurred_at: want timestamp value, got string"},
		{"decimal scale", func(r []any) []any { r[7] = dataset.NewDecimal(1, 3); return r }, "column amount: decimal"},
		{"decimal precision", func(r []any) []any { r[7] = dataset.NewDecimal(1e18, 2); return r }, "column amount: decimal"},
		{"string for json", func(r []any) []any { r[9] = "{}"; return r }, "column attributes: want json value, got string"},
		{"column count", func(r []any) []any { return r[:4] }, "got 4 columns, want 10"},
	}
	for _, f := range []fileformat.Format{fileformat.Parquet, fileformat.NDJSON} {
		for _, tt := range tests {
			t.Run(string(f)+"/"+tt.name, func(t *testing.T) {
				var buf bytes.Buffer
				w, _ := New(f, &buf, ds, Options{})
				if err := w.Write(good()); err != nil {
					t.Fatal(err)
				}
				err := w.Write(tt.mutate(good()))
				if !errors.Is(err, dataset.ErrRowMismatch) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "row 2") {
					t.Fatalf("got %v, want %q", err, tt.want)
				}
				if w.Rows() != 1 {
					t.Fatalf("Rows() = %d after a refused row", w.Rows())
				}
				w.Close()
				if err := w.Write(good()); !errors.Is(err, ErrClosed) {
					t.Fatalf("write after close: %v", err)
				}
			})
		}
	}
	if _, err := New(fileformat.Parquet, io.Discard, ds, Options{Compression: "lzo"}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "lzo") {
		t.Fatalf("lzo: %v", err)
	}
	if _, err := New("csv", io.Discard, ds, Options{}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "csv") {
		t.Fatalf("csv: %v", err)
	}
}

func TestTwosComplement(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "127", "-128", "128", "-129", "99999999999999999999999999999999999999", "-99999999999999999999999999999999999999"} {
		t.Run(s, func(t *testing.T) {
			d, err := dataset.ParseDecimal(s, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, ok := twosComplement(nil, d.BigInt(), decimalBytes(38))
			if !ok || len(b) != 16 {
				t.Fatalf("encode %s: %x %v", s, b, ok)
			}
			back := new(bigIntT).SetBytes(b)
			if b[0]&0x80 != 0 {
				back.Sub(back, new(bigIntT).Lsh(bigOne, 128))
			}
			if back.String() != d.BigInt().String() {
				t.Fatalf("%s -> %x -> %s", s, b, back)
			}
		})
	}
}
