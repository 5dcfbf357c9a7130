//go:build !noduckdb

package encode_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/encode"
)

// dictionaryPages summarizes one column chunk's pages: the dictionary
// page's value bytes (its size less the 4-byte length of each value) and the
// data pages by encoding, in file order.
func dictionaryPages(ch parquetreaders.Chunk) (dictValueBytes int, dataEncodings []string) {
	for _, p := range ch.Pages {
		if p.Type == "DICTIONARY_PAGE" {
			dictValueBytes = p.Bytes - 4*p.Values
			continue
		}
		if n := len(dataEncodings); n == 0 || dataEncodings[n-1] != p.Encoding {
			dataEncodings = append(dataEncodings, p.Encoding)
		}
	}
	return dictValueBytes, dataEncodings
}

// TestDictionaryFallback writes a day of events at the real limits and
// checks where each string column's dictionary stops. As declared, event_id
// ("dictionary": false) is PLAIN from its first value with no dictionary
// page; with the hint cleared it outgrows encode.DictionaryLimit in the
// first row group and falls back to PLAIN. session_id, user_id, event_type
// and attributes (repeated values) stay dictionary-encoded either way, and
// every value reads back.
func TestDictionaryFallback(t *testing.T) {
	const rows = encode.DefaultMaxRowGroupRows + 10_000 // two row groups
	declared, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	if declared.Columns[0].Name != "event_id" || declared.Columns[0].Dictionary != dataset.DictionaryOff {
		t.Fatalf("events declares %+v, want event_id with dictionary false", declared.Columns[0])
	}
	undeclared := declared
	undeclared.Columns = slices.Clone(declared.Columns)
	undeclared.Columns[0].Dictionary = dataset.DictionaryDefault
	gen := datasettest.NewEventGen(7, civil.FromEpochDays(20785), rows)
	written := make([][]any, rows)
	for i := range written {
		written[i] = slices.Clone(gen.Next())
	}
	repeated := []string{"event_type", "session_id", "user_id", "attributes"}
	for _, c := range []struct {
		name    string
		ds      dataset.Dataset
		eventID string // data page encodings of event_id in the first row group
		dict    bool   // event_id has a dictionary page
	}{
		{"declared", declared, "PLAIN", false},
		{"undeclared", undeclared, "RLE_DICTIONARY PLAIN", true},
	} {
		for _, profile := range encode.Profiles() {
			t.Run(c.name+"/"+profile.String(), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "events.parquet")
				writeParquet(t, path, c.ds, encode.Options{Profile: profile}, written)
				chunks, err := parquetreaders.Footer(path)
				if err != nil {
					t.Fatal(err)
				}
				if profile == encode.ProfileCompatible {
					if bad := parquetreaders.Incompatibilities(chunks); len(bad) > 0 {
						t.Errorf("outside the compatible subset:\n%s", strings.Join(bad, "\n"))
					}
				}
				want := map[string]string{"event_id": c.eventID}
				for _, col := range repeated {
					want[col] = "RLE_DICTIONARY"
				}
				for _, col := range append([]string{"event_id"}, repeated...) {
					i := slices.IndexFunc(chunks, func(ch parquetreaders.Chunk) bool { return ch.RowGroup == 0 && ch.Column == col })
					if i < 0 {
						t.Fatalf("no chunk of %s", col)
					}
					dict, enc := dictionaryPages(chunks[i])
					if got := strings.Join(enc, " "); got != want[col] {
						t.Errorf("%s: data pages %s, want %s", col, got, want[col])
					}
					if limit := encode.DictionaryLimit * 5 / 4; dict > limit {
						t.Errorf("%s: dictionary of %d value bytes, limit %d", col, dict, limit)
					}
					if hasDict := slices.ContainsFunc(chunks[i].Pages, func(p parquetreaders.Page) bool { return p.Type == "DICTIONARY_PAGE" }); col == "event_id" && hasDict != c.dict {
						t.Errorf("event_id: dictionary page %v, want %v", hasDict, c.dict)
					}
				}
				got, err := parquetreaders.ReadArrow(path)
				if err != nil {
					t.Fatal(err)
				}
				checkTable(t, c.ds, written, got, parquetreaders.ArrowType)
			})
		}
	}
}

// TestDictionaryBoundedForLongValues writes long unique JSON values, few
// enough that the page of dictionary indexes never fills: the dictionary
// must still stop near encode.DictionaryLimit rather than hold every value.
func TestDictionaryBoundedForLongValues(t *testing.T) {
	const rows, valueBytes = 1500, 2000 // 3 MB of distinct values
	ds := dataset.Dataset{Name: "long", Version: 1, Columns: []dataset.Column{
		{Name: "payload", Type: dataset.Type{Kind: dataset.KindJSON}, Nullable: true},
	}}
	pad := strings.Repeat("x", valueBytes)
	written := make([][]any, rows)
	for i := range written {
		written[i] = []any{json.RawMessage(`{"i":` + strconv.Itoa(i) + `,"pad":"` + pad + `"}`)}
	}
	for _, profile := range encode.Profiles() {
		t.Run(profile.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "long.parquet")
			writeParquet(t, path, ds, encode.Options{Profile: profile}, written)
			chunks, err := parquetreaders.Footer(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) != 1 {
				t.Fatalf("%d chunks, want one row group", len(chunks))
			}
			dict, enc := dictionaryPages(chunks[0])
			if limit := encode.DictionaryLimit*5/4 + valueBytes + 20; dict > limit || strings.Join(enc, " ") != "RLE_DICTIONARY PLAIN" {
				t.Errorf("dictionary of %d value bytes (limit %d), data pages %v", dict, limit, enc)
			}
			got, err := parquetreaders.ReadArrow(path)
			if err != nil {
				t.Fatal(err)
			}
			checkTable(t, ds, written, got, parquetreaders.ArrowType)
		})
	}
}
