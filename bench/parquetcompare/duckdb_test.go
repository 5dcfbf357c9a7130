package parquetcompare

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// The targets the profiles are held to: a compatible file at most 5% larger
// than DuckDB's for the same rows and codec, a compact one at least 10%
// smaller.
var duckdbTargets = map[encode.Profile]float64{
	encode.ProfileCompatible: 1.05,
	encode.ProfileCompact:    0.90,
}

// BenchmarkBytesVsDuckDB writes the same 1M-row events day with daybook's
// encoder in each profile and with DuckDB's Parquet writer (its defaults, the
// same codec), side by side, and prints the sizes as a table. DuckDB gets the
// rows by reading daybook's compatible/snappy file into a table, so both
// writers see identical values in identical order.
//
//	go test ./bench/parquetcompare -run '^$' -bench BytesVsDuckDB -benchtime 1x
func BenchmarkBytesVsDuckDB(b *testing.B) {
	dir := b.TempDir()
	db := duckcheck.Open(b)
	src := filepath.Join(dir, "source.parquet")
	writeOurs(b, src, encode.Options{Compression: fileformat.Snappy}, benchRows)
	if _, err := db.Exec(`CREATE TABLE events AS SELECT * FROM read_parquet('` + src + `')`); err != nil {
		b.Fatal(err)
	}
	type result struct {
		profile          encode.Profile
		codec            fileformat.Codec
		daybook, duckdb  int64
		ratio, target    float64
		daybookPerColumn string
	}
	var results []result
	duckBytes := map[fileformat.Codec]int64{}
	for _, codec := range []fileformat.Codec{fileformat.Snappy, fileformat.Zstd} {
		duckBytes[codec] = duckdbCopy(b, db, filepath.Join(dir, "duckdb-"+string(codec)+".parquet"), codec)
	}
	for _, profile := range []encode.Profile{encode.ProfileCompatible, encode.ProfileCompact} {
		for _, codec := range []fileformat.Codec{fileformat.Snappy, fileformat.Zstd} {
			b.Run(profile.String()+"/"+string(codec), func(b *testing.B) {
				var size int64
				for b.Loop() {
					w := &counter{}
					encodeOursOpts(b, w, encode.Options{Compression: codec, Profile: profile}, benchRows)
					size = w.n
				}
				ratio := float64(size) / float64(duckBytes[codec])
				b.ReportMetric(float64(size), "daybook-bytes")
				b.ReportMetric(float64(duckBytes[codec]), "duckdb-bytes")
				b.ReportMetric(ratio, "x-duckdb")
				results = append(results, result{profile: profile, codec: codec, daybook: size,
					duckdb: duckBytes[codec], ratio: ratio, target: duckdbTargets[profile]})
			})
		}
	}
	if len(results) == 0 {
		return // filtered out by -bench
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\n1M-row events day, daybook vs DuckDB (%s), same rows and codec\n", duckdbVersion(b, db))
	fmt.Fprintf(&t, "| profile    | codec  | daybook bytes | DuckDB bytes | ratio | target |\n")
	fmt.Fprintf(&t, "|------------|--------|--------------:|-------------:|------:|-------:|\n")
	for _, r := range results {
		verdict := "met"
		if r.ratio > r.target {
			verdict = "MISSED"
		}
		fmt.Fprintf(&t, "| %-10s | %-6s | %13d | %12d | %5.3f | ≤%.2f %s |\n", r.profile, r.codec, r.daybook, r.duckdb, r.ratio, r.target, verdict)
	}
	fmt.Print(t.String())
}

// duckdbCopy writes the events table with DuckDB's Parquet writer and returns
// the file size.
func duckdbCopy(tb testing.TB, db *sql.DB, path string, codec fileformat.Codec) int64 {
	tb.Helper()
	if _, err := db.Exec(fmt.Sprintf(`COPY events TO '%s' (FORMAT parquet, COMPRESSION %s)`, path, codec)); err != nil {
		tb.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

func duckdbVersion(tb testing.TB, db *sql.DB) string {
	var v string
	if err := db.QueryRow(`SELECT version()`).Scan(&v); err != nil {
		tb.Fatal(err)
	}
	return "DuckDB " + v
}
