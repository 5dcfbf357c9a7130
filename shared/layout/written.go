package layout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DataKeysThrough returns the data file keys a run may have started under
// partition (a PartitionPrefix), judged by the data keys written there:
// for each series of data files among written — part-NNNNN, or each
// slice's part-sSSSS-NNNNN, for every extension present — every number from
// 00000 to one past the highest written; and for a partition in slices, the
// first file of every slice up to the highest one written (a slice without
// rows writes none). Keys in written that are not data files directly under
// partition are ignored. The result is in key order.
//
// It names the keys at which an incomplete multipart upload can be left
// by the runs that wrote these files: a file of theirs that a retried
// CreateMultipartUpload started twice, or the file a killed run was
// writing when it stopped (the one after its last complete file). An
// S3-compatible store that lists incomplete uploads only by exact key
// (MinIO) is asked about each of these.
func DataKeysThrough(partition string, written []string) []string {
	type series struct {
		slice int // -1: not sliced
		ext   string
	}
	highest := map[series]int{}
	maxSlice := -1
	var sliceExts []string
	for _, k := range written {
		name, ok := strings.CutPrefix(k, partition)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		slice, n, ext, ok := parseDataName(name)
		if !ok {
			continue
		}
		s := series{slice, ext}
		if h, seen := highest[s]; !seen || n > h {
			highest[s] = n
		}
		if slice >= 0 {
			maxSlice = max(maxSlice, slice)
			if !slices.Contains(sliceExts, ext) {
				sliceExts = append(sliceExts, ext)
			}
		}
	}
	for i := 0; i < maxSlice; i++ {
		for _, ext := range sliceExts {
			if _, seen := highest[series{i, ext}]; !seen {
				highest[series{i, ext}] = -1 // only its first file
			}
		}
	}
	var out []string
	for s, h := range highest {
		for n := 0; n <= h+1; n++ {
			if s.slice < 0 {
				out = append(out, fmt.Sprintf("%s%s%05d%s", partition, DataPrefix, n, s.ext))
			} else {
				out = append(out, fmt.Sprintf("%s%ss%04d-%05d%s", partition, DataPrefix, s.slice, n, s.ext))
			}
		}
	}
	slices.Sort(out)
	return out
}

// parseDataName reads a data file name as DataKey or SliceDataKey write it:
// part-NNNNN<ext> (slice -1) or part-sSSSS-NNNNN<ext>, ext starting with a
// dot.
func parseDataName(name string) (slice, n int, ext string, ok bool) {
	rest, ok := strings.CutPrefix(name, DataPrefix)
	if !ok {
		return 0, 0, "", false
	}
	slice = -1
	if r, sliced := strings.CutPrefix(rest, "s"); sliced {
		num, after, found := strings.Cut(r, "-")
		if !found || len(num) != 4 {
			return 0, 0, "", false
		}
		if slice, ok = number(num); !ok {
			return 0, 0, "", false
		}
		rest = after
	}
	num, after, found := strings.Cut(rest, ".")
	if !found || len(num) != 5 {
		return 0, 0, "", false
	}
	if n, ok = number(num); !ok {
		return 0, 0, "", false
	}
	return slice, n, "." + after, true
}

func number(s string) (int, bool) {
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// IsPartitionDataKey reports whether key is a data file of the partition
// whose key prefix is partition (PartitionPrefix, ending in "/"), named as
// DataKey or SliceDataKey name one with the extension ext (".parquet",
// ".ndjson.gz"): directly under the partition, `part-NNNNN<ext>` or
// `part-sSSSS-NNNNN<ext>`; an empty ext accepts any extension. It is what
// a manifest read back from a bucket must list: any other key is not a
// file daybook wrote there.
func IsPartitionDataKey(partition, key, ext string) bool {
	name, ok := strings.CutPrefix(key, partition)
	if !ok || partition == "" || !strings.HasSuffix(partition, "/") || strings.Contains(name, "/") {
		return false
	}
	_, _, got, ok := parseDataName(name)
	return ok && (ext == "" || got == ext)
}
