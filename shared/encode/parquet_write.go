package encode

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// chunkRows is the most rows handed to parquet-go per column call. Chunks
// end where a row group must end, where a dictionary column's page must be
// cut, and every sizeCheckRows rows of a row group, when the buffered size
// is checked against MaxRowGroupBytes (the estimate walks every column:
// every 1024 rows is often enough to stay near the byte limit and cheap
// enough not to show).
const (
	chunkRows     = 512
	sizeCheckRows = 1024
)

// colPlan is the per-column work of writeBatch, precomputed once.
type colPlan struct {
	storage dataset.Storage
	kind    dataset.Kind
	def     int           // definition level of a value: 1 if the column is optional
	null    parquet.Value // the column's NULL, levels set
	int32   bool          // a decimal stored as INT32 (precision up to 9)
	flba    int           // fixed length of a wide decimal
	dict    bool          // dictionary-encoded: counts bytes towards a page cut
}

type parquetWriter struct {
	ds         dataset.Dataset
	pw         *parquet.Writer
	plan       []colPlan
	vals       []parquet.Value // one column chunk's values, reused
	rowBuf     rowBuffer
	rows       int64 // rows handed to parquet-go
	inGroup    int64
	maxRows    int64
	maxBytes   int64
	closed     bool
	groupStart int64 // pw.Size() after the last flush; Size minus it estimates the buffered group

	// parquet-go compares a dictionary with its limit only when it ends a
	// page, and a page of dictionary indexes holds up to 64k values
	// however long they are; left alone, a column of long unique values
	// would grow its dictionary far past the limit before falling back.
	// pending counts the value bytes each dictionary-encoded column took
	// since its last page (0 for other columns); past pageCut the column's
	// page is ended, so a dictionary never passes the limit by more than
	// pageCut plus one chunk's values.
	pending []int64
	pageCut int64
}

// ColumnIndexTruncateLength is the most bytes of a string's minimum or
// maximum a page's entry in the column index holds (the maximum rounded up
// when it is cut): parquet-mr's default (parquet.columnindex.truncate.length).
const ColumnIndexTruncateLength = 64

// HasBounds reports whether the Parquet files carry c's minimum and
// maximum: in the column chunk, the column index and every data page
// header. parquet-go writes a chunk's and a page's bounds whole, so a
// column whose values may be large carries none: JSON, up to
// dataset.MaxJSONBytes a value, whose bounds (the least and greatest JSON
// text, byte by byte) no engine prunes with. Its chunks keep their null
// count. A string (dataset.MaxStringBytes at most) keeps its bounds.
func HasBounds(c dataset.Column) bool { return c.Type.Kind != dataset.KindJSON }

func newParquet(w io.Writer, ds dataset.Dataset, opts Options) (*parquetWriter, error) {
	schema, err := Schema(ds, opts)
	if err != nil {
		return nil, err
	}
	codec := pageCodec(opts.Profile, opts.Compression)
	if codec == nil {
		return nil, fmt.Errorf("encode dataset %s: compression %q: %w", ds.Name, opts.Compression, ErrUnsupported)
	}
	pageVersion := 1
	if opts.Profile == ProfileCompact {
		pageVersion = 2
	}
	dictLimit := cmp.Or(opts.tuning.dictionaryLimit, DictionaryLimit)
	wopts := []parquet.WriterOption{
		schema,
		parquet.Compression(codec),
		parquet.DataPageVersion(pageVersion),
		parquet.DataPageStatistics(true),
		parquet.ColumnIndexSizeLimit(func([]string) int { return ColumnIndexTruncateLength }),
		parquet.DictionaryMaxBytes(dictLimit), // see parquetWriter.pending
		parquet.PageBufferSize(cmp.Or(opts.tuning.pageBytes, parquet.DefaultPageBufferSize)),
		parquet.CreatedBy("daybook", "", ""),
		parquet.KeyValueMetadata("daybook.dataset", ds.Name),
		parquet.KeyValueMetadata("daybook.schema_version", strconv.Itoa(ds.Version)),
	}
	for _, c := range ds.Columns {
		if !HasBounds(c) {
			wopts = append(wopts, parquet.SkipPageBounds(c.Name), parquet.SkipPageStatistics(c.Name))
		}
	}
	pw := parquet.NewWriter(w, wopts...)
	plan := make([]colPlan, len(ds.Columns))
	for i, c := range ds.Columns {
		p := colPlan{storage: dataset.StorageOf(c.Type), kind: c.Type.Kind, null: parquet.NullValue().Level(0, 0, i)}
		if c.Nullable {
			p.def = 1
		}
		if c.Type.Kind == dataset.KindDecimal {
			p.int32 = c.Type.Precision <= 9
			if c.Type.Precision > 18 {
				p.flba = decimalBytes(c.Type.Precision)
			}
		}
		p.dict = dictionaryEncoded(c) // see columnNode
		plan[i] = p
	}
	pwr := &parquetWriter{
		pending:  make([]int64, len(ds.Columns)),
		pageCut:  max(1, dictLimit/4),
		ds:       ds,
		pw:       pw,
		plan:     plan,
		vals:     make([]parquet.Value, 0, chunkRows),
		rowBuf:   rowBuffer{ds: ds},
		maxRows:  cmp.Or(max(opts.MaxRowGroupRows, 0), DefaultMaxRowGroupRows),
		maxBytes: cmp.Or(max(opts.MaxRowGroupBytes, 0), DefaultMaxRowGroupBytes),
	}
	return pwr, nil
}

// Write buffers one row into the writer's own batch; a full batch is
// encoded like any other (see WriteBatch).
func (w *parquetWriter) Write(row []any) error {
	if w.closed {
		return ErrClosed
	}
	full, err := w.rowBuf.add(row, w.rows)
	if err != nil || !full {
		return err
	}
	return w.flushRows()
}

// flushRows encodes the rows Write buffered.
func (w *parquetWriter) flushRows() error { return w.rowBuf.flush(w.writeBatch) }

// WriteBatch encodes every row of b, column by column.
func (w *parquetWriter) WriteBatch(b *dataset.Batch) error {
	if w.closed {
		return ErrClosed
	}
	if err := w.flushRows(); err != nil {
		return err
	}
	return w.writeBatch(b)
}

func (w *parquetWriter) writeBatch(b *dataset.Batch) error {
	if err := checkBatch(w.ds, b); err != nil {
		return err
	}
	cols := w.pw.ColumnWriters()
	for lo := 0; lo < b.Len(); {
		hi := w.chunkEnd(b, lo)
		cut := false
		for i := range w.plan {
			p, v := &w.plan[i], &b.Cols[i]
			if _, err := cols[i].WriteRowValues(w.values(p, v, lo, hi)); err != nil {
				return fmt.Errorf("encode parquet dataset %s rows %d..%d column %s: %w", w.ds.Name, b.RowNum(lo), b.RowNum(hi-1), v.Column.Name, err)
			}
			if p.dict {
				w.pending[i] += int64(v.Offsets[hi] - v.Offsets[lo])
				cut = cut || w.pending[i] >= w.pageCut
			}
		}
		w.rows += int64(hi - lo)
		w.inGroup += int64(hi - lo)
		lo = hi
		if cut {
			if err := w.endDictionaryPages(); err != nil {
				return err
			}
		}
		if w.inGroup >= w.maxRows || (w.inGroup%sizeCheckRows == 0 && w.pw.Size()-w.groupStart > w.maxBytes) {
			if err := w.endRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// chunkEnd returns the end of the chunk of b starting at row lo: at most
// chunkRows rows, ending at the row group's row limit, at the next size
// check, and at the row after which a dictionary column has taken pageCut
// bytes since its last page.
func (w *parquetWriter) chunkEnd(b *dataset.Batch, lo int) int {
	hi := min(b.Len(), lo+chunkRows, lo+int(w.maxRows-w.inGroup), lo+int(sizeCheckRows-w.inGroup%sizeCheckRows))
	for i := range w.plan {
		if !w.plan[i].dict {
			continue
		}
		offs := b.Cols[i].Offsets
		need := w.pageCut - w.pending[i]
		if int64(offs[hi]-offs[lo]) < need {
			continue
		}
		// The first row whose value reaches need ends the chunk.
		hi = lo + 1 + sort.Search(hi-lo-1, func(k int) bool { return int64(offs[lo+k+1]-offs[lo]) >= need })
	}
	return hi
}

// values returns rows [lo, hi) of v as parquet values in w.vals, a NULL as
// the column's null value and any other with its definition level: the
// only level parquet-go reads from values written to one column (the
// repetition level is 0, and the column is the writer's), set with
// SetDefinitionLevel rather than Level, which also sets the column index
// and does not inline. Byte values alias v's memory: parquet-go copies them.
func (w *parquetWriter) values(p *colPlan, v *dataset.Vector, lo, hi int) []parquet.Value {
	out := w.vals[:hi-lo]
	if v.Null == nil {
		return w.requiredValues(p, v, lo, hi, out)
	}
	nulls, def, null := v.Null[lo:hi], p.def, p.null
	switch {
	case p.storage == dataset.StorageInt32 || p.int32:
		for i := range out {
			if nulls[i] {
				out[i] = null
				continue
			}
			var x int32
			if p.int32 {
				x = int32(v.Int64[lo+i])
			} else {
				x = v.Int32[lo+i]
			}
			out[i] = parquet.Int32Value(x)
			out[i].SetDefinitionLevel(def)
		}
	case p.storage == dataset.StorageInt64:
		for i, x := range v.Int64[lo:hi] {
			if nulls[i] {
				out[i] = null
				continue
			}
			out[i] = parquet.Int64Value(x)
			out[i].SetDefinitionLevel(def)
		}
	case p.storage == dataset.StorageDouble:
		for i, x := range v.Double[lo:hi] {
			if nulls[i] {
				out[i] = null
				continue
			}
			out[i] = parquet.DoubleValue(x)
			out[i].SetDefinitionLevel(def)
		}
	case p.storage == dataset.StorageBool:
		for i, x := range v.Bool[lo:hi] {
			if nulls[i] {
				out[i] = null
				continue
			}
			out[i] = parquet.BooleanValue(x)
			out[i].SetDefinitionLevel(def)
		}
	case p.flba > 0:
		for i := range out {
			if nulls[i] {
				out[i] = null
				continue
			}
			// The batch holds 16 bytes; the column's value fits its
			// precision, so the leading bytes are sign extension.
			out[i] = parquet.FixedLenByteArrayValue(v.BytesAt(lo + i)[dataset.WideDecimalBytes-p.flba:])
			out[i].SetDefinitionLevel(def)
		}
	default:
		offs, data := v.Offsets[lo:hi+1], v.Bytes
		for i := range out {
			if nulls[i] {
				out[i] = null
				continue
			}
			start, end := offs[i], offs[i+1]
			out[i] = parquet.ByteArrayValue(data[start:end:end])
			out[i].SetDefinitionLevel(def)
		}
	}
	return out
}

// requiredValues is values for a required column: parquet-go reads no
// levels from the values of a column without definition levels, so they
// are left unset.
func (w *parquetWriter) requiredValues(p *colPlan, v *dataset.Vector, lo, hi int, out []parquet.Value) []parquet.Value {
	switch {
	case p.int32:
		for r := lo; r < hi; r++ {
			out[r-lo] = parquet.Int32Value(int32(v.Int64[r]))
		}
	case p.storage == dataset.StorageInt32:
		for r := lo; r < hi; r++ {
			out[r-lo] = parquet.Int32Value(v.Int32[r])
		}
	case p.storage == dataset.StorageInt64:
		for r := lo; r < hi; r++ {
			out[r-lo] = parquet.Int64Value(v.Int64[r])
		}
	case p.storage == dataset.StorageDouble:
		for r := lo; r < hi; r++ {
			out[r-lo] = parquet.DoubleValue(v.Double[r])
		}
	case p.storage == dataset.StorageBool:
		for r := lo; r < hi; r++ {
			out[r-lo] = parquet.BooleanValue(v.Bool[r])
		}
	case p.flba > 0:
		for r := lo; r < hi; r++ {
			out[r-lo] = parquet.FixedLenByteArrayValue(v.BytesAt(r)[dataset.WideDecimalBytes-p.flba:])
		}
	default:
		offs, data := v.Offsets, v.Bytes
		for r := lo; r < hi; r++ {
			out[r-lo] = parquet.ByteArrayValue(data[offs[r]:offs[r+1]:offs[r+1]])
		}
	}
	return out
}

// endDictionaryPages ends the current page of every column that took
// pageCut value bytes since its last one: ending a page is when parquet-go
// checks the dictionary against its limit and falls back to PLAIN.
func (w *parquetWriter) endDictionaryPages() error {
	cols := w.pw.ColumnWriters()
	for i, n := range w.pending {
		if n < w.pageCut {
			continue
		}
		if err := cols[i].Flush(); err != nil {
			return fmt.Errorf("encode parquet dataset %s column %s: end page: %w", w.ds.Name, w.ds.Columns[i].Name, err)
		}
		w.pending[i] = 0
	}
	return nil
}
