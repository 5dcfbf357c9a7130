package encode

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// chunkRows is the most rows handed to parquet-go per column call. Chunks
// end where a row group must end, where a dictionary column's page must be
// cut, and every sizeCheckRows rows of a row group, where the buffered size
// may be checked against MaxRowGroupBytes (the estimate walks every column:
// every 1024 rows is often enough to stay near the byte limit and cheap
// enough not to show; segmentEnd skips the checks that cannot end the row
// group, the chunks stay the same).
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
	list    *listPlan     // a list column (list.go)
}

type parquetWriter struct {
	ds          dataset.Dataset
	pw          *parquet.Writer
	plan        []colPlan
	vals        [][]parquet.Value // one column chunk's values per worker, reused
	rowBuf      rowBuffer
	rows        int64 // rows handed to parquet-go
	inGroup     int64
	maxRows     int64
	maxBytes    int64
	closed      bool
	hasList     bool   // a list column: every size check is made (segmentEnd)
	everyCheck  bool   // tests: every size check is made
	segmentOpen func() // tests: see tuning
	segments    int    // segments encoded so far (tests read it)
	groupStart  int64  // pw.Size() after the last flush; Size minus it estimates the buffered group

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

	// A segment's chunks (their ends) and the pending bytes they leave
	// (planChunks); the columns in the order workers take them, the next
	// one's index in order, and each column's error (encodeSegment).
	ends    []int
	planned []int64
	workers int
	assist  *Assist // Options.Assist: nil, or helpers beside the workers
	order   []int
	next    atomic.Int64
	errs    []error
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
// count. So does binary (dataset.MaxBinaryBytes a value). A string
// (dataset.MaxStringBytes at most) keeps its bounds.
func HasBounds(c dataset.Column) bool {
	return c.Type.Kind != dataset.KindJSON && c.Type.Kind != dataset.KindBinary
}

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
		if c.Type.Kind == dataset.KindList {
			p.list = newListPlan(c, i)
		}
		plan[i] = p
	}
	workers := min(max(1, opts.Workers), len(ds.Columns))
	vals := make([][]parquet.Value, workers)
	for k := range vals {
		vals[k] = make([]parquet.Value, 0, chunkRows)
	}
	pwr := &parquetWriter{
		pending:  make([]int64, len(ds.Columns)),
		planned:  make([]int64, len(ds.Columns)),
		errs:     make([]error, len(ds.Columns)),
		pageCut:  max(1, dictLimit/4),
		ds:       ds,
		pw:       pw,
		plan:     plan,
		vals:     vals,
		workers:  workers,
		assist:   opts.Assist,
		order:    columnOrder(plan),
		rowBuf:   rowBuffer{ds: ds},
		maxRows:  cmp.Or(max(opts.MaxRowGroupRows, 0), DefaultMaxRowGroupRows),
		maxBytes: cmp.Or(max(opts.MaxRowGroupBytes, 0), DefaultMaxRowGroupBytes),
	}
	for _, c := range ds.Columns {
		pwr.hasList = pwr.hasList || c.Type.Kind == dataset.KindList
	}
	pwr.everyCheck, pwr.segmentOpen = opts.tuning.everySizeCheck, opts.tuning.segmentOpen
	return pwr, nil
}

// columnOrder is the order the workers take a segment's columns in, the
// dearest first so that the last one taken is short: dictionary-encoded
// strings and JSON (a map lookup a value), then the other variable-length
// columns, then fixed-width ones, each in declared order.
func columnOrder(plan []colPlan) []int {
	cost := func(p colPlan) int {
		switch {
		case p.dict:
			return 0
		case p.storage == dataset.StorageBytes:
			return 1
		}
		return 2
	}
	order := make([]int, len(plan))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cost(plan[order[a]]) < cost(plan[order[b]]) })
	return order
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

// writeBatch encodes b a segment at a time: the rows up to the next size
// check that could end the row group, the end of the row group or the end
// of the batch (segmentEnd). A segment is cut into chunks first
// (chunkEnd, from the column offsets alone), then each column writes its
// chunks (encodeColumn), on up to w.workers goroutines side by side and a
// goroutine helping through Options.Assist: every
// column's writer sees the calls the one-goroutine order would make, and
// the row group's size is read only once every column has its segment,
// so the file's bytes do not depend on the workers.
func (w *parquetWriter) writeBatch(b *dataset.Batch) error {
	if err := checkBatch(w.ds, b); err != nil {
		return err
	}
	for lo := 0; lo < b.Len(); {
		hi := w.segmentEnd(b, lo)
		w.segments++
		w.planChunks(b, lo, hi)
		if err := w.encodeSegment(b, lo); err != nil {
			return err
		}
		w.rows += int64(hi - lo)
		w.inGroup += int64(hi - lo)
		lo = hi
		if w.inGroup >= w.maxRows || (w.inGroup%sizeCheckRows == 0 && w.pw.Size()-w.groupStart > w.maxBytes) {
			if err := w.endRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// planChunks sets w.ends to the ends of the chunks of rows [lo, hi) of b,
// following in w.planned the bytes each dictionary column will have taken
// since its last page (what encodeColumn does to w.pending).
func (w *parquetWriter) planChunks(b *dataset.Batch, lo, hi int) {
	w.ends = w.ends[:0]
	copy(w.planned, w.pending)
	start := lo
	for lo < hi {
		// No chunk spans a size check, made or skipped (segmentEnd): the
		// columns see the calls of a writer making every check.
		check := lo + int(sizeCheckRows-(w.inGroup+int64(lo-start))%sizeCheckRows)
		end := w.chunkEnd(b, lo, min(hi, check))
		for i := range w.plan {
			if w.plan[i].dict {
				offs := b.Cols[i].Offsets
				if w.planned[i] += int64(offs[end] - offs[lo]); w.planned[i] >= w.pageCut {
					w.planned[i] = 0
				}
			}
		}
		w.ends = append(w.ends, end)
		lo = end
	}
}

// encodeSegment writes the planned chunks of every column, the columns
// taken in w.order by up to w.workers goroutines and an Assist's helper.
func (w *parquetWriter) encodeSegment(b *dataset.Batch, lo int) error {
	if w.workers <= 1 {
		for _, i := range w.order {
			if err := w.encodeColumn(b, i, lo, w.vals[0]); err != nil {
				return err
			}
		}
		return nil
	}
	w.next.Store(0)
	clear(w.errs)
	var wg sync.WaitGroup
	w.assist.offer(&segment{w: w, b: b, lo: lo, wg: &wg})
	if w.segmentOpen != nil {
		w.segmentOpen()
	}
	for k := 1; k < w.workers; k++ {
		wg.Go(func() { w.encodeColumns(b, lo, w.vals[k]) })
	}
	w.encodeColumns(b, lo, w.vals[0])
	w.assist.withdraw()
	wg.Wait()
	for _, err := range w.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// encodeColumns takes columns from w.order until none is left and returns
// how many it took.
func (w *parquetWriter) encodeColumns(b *dataset.Batch, lo int, vals []parquet.Value) (n int) {
	for ; ; n++ {
		k := int(w.next.Add(1)) - 1
		if k >= len(w.order) {
			return n
		}
		i := w.order[k]
		w.errs[i] = w.encodeColumn(b, i, lo, vals)
	}
}

// encodeColumn writes column i's chunks of the segment starting at row
// lo, ending the column's page after a chunk that took its dictionary
// pageCut bytes since its last page: ending a page is when parquet-go
// checks the dictionary against its limit and falls back to PLAIN.
func (w *parquetWriter) encodeColumn(b *dataset.Batch, i, lo int, vals []parquet.Value) error {
	col := w.pw.ColumnWriters()[i]
	p, v := &w.plan[i], &b.Cols[i]
	for _, hi := range w.ends {
		if _, err := col.WriteRowValues(w.values(p, v, lo, hi, vals)); err != nil {
			return fmt.Errorf("encode parquet dataset %s rows %d..%d column %s: %w", w.ds.Name, b.RowNum(lo), b.RowNum(hi-1), v.Column.Name, err)
		}
		if p.dict {
			if w.pending[i] += int64(v.Offsets[hi] - v.Offsets[lo]); w.pending[i] >= w.pageCut {
				if err := col.Flush(); err != nil {
					return fmt.Errorf("encode parquet dataset %s column %s: end page: %w", w.ds.Name, v.Column.Name, err)
				}
				w.pending[i] = 0
			}
		}
		lo = hi
	}
	return nil
}

// chunkEnd returns the end of the chunk of b starting at row lo: at most
// chunkRows rows, ending at the segment's end, and at the row after which
// a dictionary column has taken pageCut bytes since its last page (as
// planned: see planChunks).
func (w *parquetWriter) chunkEnd(b *dataset.Batch, lo, end int) int {
	hi := min(end, lo+chunkRows)
	for i := range w.plan {
		if !w.plan[i].dict {
			continue
		}
		offs := b.Cols[i].Offsets
		need := w.pageCut - w.planned[i]
		if int64(offs[hi]-offs[lo]) < need {
			continue
		}
		// The first row whose value reaches need ends the chunk.
		hi = lo + 1 + sort.Search(hi-lo-1, func(k int) bool { return int64(offs[lo+k+1]-offs[lo]) >= need })
	}
	return hi
}

// values returns rows [lo, hi) of v as parquet values in vals, a NULL as
// the column's null value and any other with its definition level: the
// only level parquet-go reads from values written to one column (the
// repetition level is 0, and the column is the writer's), set with
// SetDefinitionLevel rather than Level, which also sets the column index
// and does not inline. Byte values alias v's memory: parquet-go copies them.
func (w *parquetWriter) values(p *colPlan, v *dataset.Vector, lo, hi int, vals []parquet.Value) []parquet.Value {
	if p.list != nil {
		return p.list.values(v, lo, hi)
	}
	out := vals[:hi-lo]
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
