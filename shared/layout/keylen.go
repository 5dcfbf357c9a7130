package layout

import (
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// LongestKey returns the longest key daybook can write under a rendered
// prefix for the given datasets: every key function of this package with its
// widest arguments (data file part-99999 with the longest extension of any
// format, a load script of an engine name MaxEngineNameLen long, the
// partition's metadata, the delivery manifest, the README and the schemas).
// The day is always 10 characters. The table files of a dataset's Iceberg
// table (TableFileKey) count too, at their longest name.
// maxSliceNumber is the highest slice number a sliced export names
// (partition.MaxSlices - 1; layout does not import partition).
const maxSliceNumber = 999

func LongestKey(prefix string, datasets []string) string {
	day := civil.MustParse("2026-12-31")
	ext := ""
	for _, f := range fileformat.Formats() {
		if len(f.Extension()) > len(ext) {
			ext = f.Extension()
		}
	}
	engine := strings.Repeat("e", MaxEngineNameLen)
	keys := []string{DeliveryManifestKey(prefix, day), ReadmeKey(prefix)}
	for _, ds := range datasets {
		keys = append(keys,
			DataKey(prefix, ds, day, maxPartNumber, ext),
			SliceDataKey(prefix, ds, day, maxSliceNumber, maxPartNumber, ext),
			ManifestKey(prefix, ds, day),
			SuccessKey(prefix, ds, day),
			LoadKey(prefix, ds, day, engine),
			SchemaKey(prefix, ds),
			ChangeKey(prefix, time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), ds, day, 1<<40),
			TableFileKey(prefix, ds, strings.Repeat("t", MaxTableFileNameLen)),
		)
	}
	longest := ""
	for _, k := range keys {
		if len(k) > len(longest) {
			longest = k
		}
	}
	return longest
}

// CheckKeyLength refuses a rendered prefix under which a key for one of the
// datasets would exceed MaxKeyBytes. The error is a *PrefixError naming the
// prefix, the longest key's length and by how much to shorten the prefix.
func CheckKeyLength(prefix string, datasets []string) error {
	k := LongestKey(prefix, datasets)
	if n := len(k); n > MaxKeyBytes {
		return refuse(prefix, "its longest key (%s) is %d bytes; S3 keys are at most %d bytes: shorten the prefix by %d",
			strings.TrimPrefix(k, clean(prefix)+"/"), n, MaxKeyBytes, n-MaxKeyBytes)
	}
	return nil
}

// TableDir is the folder of a dataset's Iceberg table files, beside its dt=
// folders (shared/icetable).
const TableDir = "metadata"

// MaxTableFileNameLen is the longest name of a file in TableDir. The
// longest the table library writes is a manifest list,
// snap-<snapshot id, at most 19 digits>-<attempt>-<uuid>.avro, counted with
// a 3-digit attempt; the metadata files v<N>.metadata.json, the version
// hint and the manifests <uuid>-m<n>.avro are shorter.
const MaxTableFileNameLen = len("snap-") + 19 + len("-999-") + 36 + len(".avro")

// TableFileKey is the key of the table file name of dataset's table.
func TableFileKey(prefix, ds, name string) string {
	return DatasetPrefix(prefix, ds) + TableDir + "/" + name
}
