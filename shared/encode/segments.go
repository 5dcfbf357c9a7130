package encode

import "github.com/daybook-dev/daybook/shared/dataset"

// Bounds on how much one row can grow parquet-go's estimate of the
// buffered row group (Writer.Size: encoded pages, buffered values, the
// dictionary), used to skip size checks that cannot end a row group (see
// segmentEnd): a value's own bytes at most growthPerByte times (buffered
// or in a dictionary, in a page that compression does not shrink, and as a
// page's minimum and maximum, which the page header holds twice: in the
// deprecated min/max fields and in min_value/max_value), plus
// growthPerValue for its length, index and levels, plus growthPerChunk for
// each column's page header a chunk may end.
const (
	growthPerByte  = 7
	growthPerValue = 32
	growthPerChunk = 1024
)

// segmentEnd returns the end of the segment of b starting at row lo: the
// end of the row group (maxRows) or of the batch, or the first size check
// (every sizeCheckRows rows of a row group) that could end the row group.
// A check is skipped when the rows up to it cannot grow the buffered row
// group past maxBytes, however they encode (growthBound): it could not
// have ended the row group. The chunks still end at every check
// (planChunks), so the file is the one a writer making every check writes
// (TestSkippedSizeChecksKeepRowGroups), and the columns' workers are
// started once per segment instead of once per check. Nothing here
// depends on the workers.
func (w *parquetWriter) segmentEnd(b *dataset.Batch, lo int) int {
	limit := min(b.Len(), lo+int(w.maxRows-w.inGroup))
	hi := min(limit, lo+int(sizeCheckRows-w.inGroup%sizeCheckRows))
	if hi == limit || w.hasList || w.everyCheck {
		return hi
	}
	size := w.pw.Size() - w.groupStart
	for hi < limit && size+w.growthBound(b, lo, hi) <= w.maxBytes {
		hi = min(limit, hi+sizeCheckRows)
	}
	return hi
}

// growthBound bounds how many bytes rows [lo, hi) of b can add to the
// buffered row group's estimate (see growthPerByte). Lists are not
// bounded: a dataset with a list column checks every sizeCheckRows rows.
func (w *parquetWriter) growthBound(b *dataset.Batch, lo, hi int) int64 {
	rows, cols := int64(hi-lo), int64(len(b.Cols))
	chunks := rows/chunkRows + 2 // a page cut may end one more
	bound := rows*cols*growthPerValue + chunks*cols*growthPerChunk
	for i := range b.Cols {
		if offs := b.Cols[i].Offsets; offs != nil {
			bound += growthPerByte * int64(offs[hi]-offs[lo])
		}
	}
	return bound
}
