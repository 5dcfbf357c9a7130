package parquetreaders

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Chunk is one column chunk as its footer entry and its page headers
// describe it, read with Arrow's metadata API and page reader.
type Chunk struct {
	RowGroup int
	Column   string // the top-level column (a list column's, not its leaf's)
	Physical string
	// Encodings is the column chunk metadata's list of encodings.
	Encodings []string
	// Pages lists each page header in file order.
	Pages []Page
	// HasMinMax and HasNullCount say whether the chunk carries statistics
	// Arrow trusts (it ignores statistics it knows a writer got wrong);
	// NullCount is the count it holds.
	HasMinMax    bool
	HasNullCount bool
	NullCount    int64
	// Min and Max are the chunk's bounds as canonical text (see the
	// package comment), NULL without them.
	Min, Max Value
	// Values counts the chunk's values, NULL included.
	Values int64
}

// Page is one page header.
type Page struct {
	// Type is DICTIONARY_PAGE, DATA_PAGE or DATA_PAGE_V2.
	Type string
	// Encoding is the encoding of the page's values.
	Encoding string
	// LevelEncoding is the definition level encoding of a version 1 data
	// page (RLE or BIT_PACKED), "" for other pages.
	LevelEncoding string
	Values        int
	// Bytes is the page's uncompressed size.
	Bytes int
	// HasMinMax and HasNullCount say which statistics a data page's header
	// carries; NullCount is the count it holds.
	HasMinMax, HasNullCount bool
	NullCount               int64
}

// Footer returns every column chunk of the file at path, row group by row
// group, with its page headers.
func Footer(path string) ([]Chunk, error) {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("footer: open %s: %w", path, err)
	}
	defer rdr.Close()
	sc := rdr.MetaData().Schema
	var out []Chunk
	for g := range rdr.NumRowGroups() {
		rg := rdr.RowGroup(g)
		for c := range rg.NumColumns() {
			md, err := rg.MetaData().ColumnChunk(c)
			if err != nil {
				return nil, fmt.Errorf("footer: %s row group %d column %d: %w", path, g, c, err)
			}
			ch := Chunk{RowGroup: g, Column: sc.ColumnRoot(c).Name(), Physical: md.Type().String(), Values: md.NumValues()}
			for _, e := range md.Encodings() {
				ch.Encodings = append(ch.Encodings, e.String())
			}
			stats, err := md.Statistics()
			if err != nil {
				return nil, fmt.Errorf("footer: %s row group %d column %s statistics: %w", path, g, ch.Column, err)
			}
			if stats != nil {
				ch.HasMinMax, ch.HasNullCount, ch.NullCount = stats.HasMinMax(), stats.HasNullCount(), stats.NullCount()
				if ch.HasMinMax {
					if ch.Min, ch.Max, err = bounds(sc.Column(c), stats); err != nil {
						return nil, fmt.Errorf("footer: %s row group %d column %s: %w", path, g, ch.Column, err)
					}
				}
			}
			if ch.Pages, err = pages(rg, c); err != nil {
				return nil, fmt.Errorf("footer: %s row group %d column %s: %w", path, g, ch.Column, err)
			}
			out = append(out, ch)
		}
	}
	return out, nil
}

// bounds returns a chunk's statistics as canonical text.
func bounds(col *schema.Column, stats metadata.TypedStatistics) (lo, hi Value, err error) {
	scale := -1
	if d, ok := col.LogicalType().(schema.DecimalLogicalType); ok {
		scale = int(d.Scale())
	}
	integer := func(n int64) Value {
		if scale >= 0 {
			return Text(dataset.NewDecimal(n, scale).String())
		}
		return Text(strconv.FormatInt(n, 10))
	}
	switch s := stats.(type) {
	case *metadata.Int32Statistics:
		return integer(int64(s.Min())), integer(int64(s.Max())), nil
	case *metadata.Int64Statistics:
		return integer(s.Min()), integer(s.Max()), nil
	case *metadata.Float64Statistics:
		return Text(FormatDouble(s.Min())), Text(FormatDouble(s.Max())), nil
	case *metadata.BooleanStatistics:
		return Text(strconv.FormatBool(s.Min())), Text(strconv.FormatBool(s.Max())), nil
	case *metadata.ByteArrayStatistics:
		return Text(string(s.Min())), Text(string(s.Max())), nil
	case *metadata.FixedLenByteArrayStatistics:
		if scale < 0 {
			return lo, hi, fmt.Errorf("fixed-length statistics of a non-decimal column")
		}
		dec := func(b []byte) Value {
			n := new(big.Int).SetBytes(b)
			if len(b) > 0 && b[0]&0x80 != 0 {
				n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
			}
			return Text(dataset.NewDecimalBig(n, scale).String())
		}
		return dec(s.Min()), dec(s.Max()), nil
	}
	return lo, hi, fmt.Errorf("statistics of type %T", stats)
}

func pages(rg *file.RowGroupReader, c int) ([]Page, error) {
	pr, err := rg.GetColumnPageReader(c)
	if err != nil {
		return nil, err
	}
	var out []Page
	for pr.Next() {
		p := pr.Page()
		pg := Page{Type: p.Type().String(), Encoding: p.Encoding().String(), Values: int(p.NumValues()), Bytes: len(p.Data())}
		switch dp := p.(type) {
		case *file.DataPageV1:
			pg.LevelEncoding = parquet.Encoding(dp.DefinitionLevelEncoding()).String()
			st := dp.Statistics()
			pg.HasMinMax, pg.HasNullCount, pg.NullCount = st.HasMin && st.HasMax, st.HasNullCount, st.NullCount
		case *file.DataPageV2:
			st := dp.Statistics()
			pg.HasMinMax, pg.HasNullCount, pg.NullCount = st.HasMin && st.HasMax, st.HasNullCount, st.NullCount
		}
		out = append(out, pg)
	}
	return out, pr.Err()
}

// CompatibleEncodings are the encodings every mainstream reader decodes:
// what Spark, pyarrow and DuckDB write by default. BIT_PACKED is the
// deprecated level encoding, still read everywhere.
var CompatibleEncodings = []string{"PLAIN", "RLE", "RLE_DICTIONARY", "PLAIN_DICTIONARY", "BIT_PACKED"}

// Incompatibilities lists what in chunks falls outside the compatible
// subset: an encoding not in CompatibleEncodings in a chunk's metadata or a
// page header, or a page other than a dictionary page or a version 1 data
// page. Empty means every reader can decode the file.
func Incompatibilities(chunks []Chunk) []string {
	var out []string
	bad := func(e string) bool { return e != "" && !slices.Contains(CompatibleEncodings, e) }
	for _, ch := range chunks {
		where := fmt.Sprintf("row group %d column %s", ch.RowGroup, ch.Column)
		for _, e := range ch.Encodings {
			if bad(e) {
				out = append(out, fmt.Sprintf("%s: chunk encoding %s", where, e))
			}
		}
		for i, p := range ch.Pages {
			if p.Type != "DICTIONARY_PAGE" && p.Type != "DATA_PAGE" {
				out = append(out, fmt.Sprintf("%s page %d: %s", where, i, p.Type))
			}
			if bad(p.Encoding) || bad(p.LevelEncoding) {
				out = append(out, fmt.Sprintf("%s page %d: %s encoded %s, levels %s", where, i, p.Type, p.Encoding, p.LevelEncoding))
			}
		}
	}
	return out
}
