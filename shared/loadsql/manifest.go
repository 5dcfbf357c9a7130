package loadsql

import (
	"slices"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// ForManifest describes a committed generation from its manifest: the
// scripts name exactly the manifest's files, never a listing or a glob.
func ForManifest(ds dataset.Dataset, m *manifest.Manifest, bucket, partitionPrefix string) (Partition, error) {
	day, err := civil.Parse(m.Day)
	if err != nil {
		return Partition{}, err
	}
	p := Partition{
		Dataset: ds, Day: day, Generation: m.Generation, Format: fileformat.Format(m.Format), Compression: fileformat.Codec(m.Compression),
		Bucket: bucket, PartitionPrefix: partitionPrefix,
	}
	for _, f := range m.Files {
		p.Files = append(p.Files, File{Key: f.Key, Rows: f.Rows, Bytes: f.Bytes})
	}
	return p, nil
}

// Scripts renders every file of a partition's `_load/` folder, keyed by file
// name: one `<engine>.sql` per engine that reads the partition
// (EnginesFor), plus, on S3, the Redshift COPY manifest that redshift.sql
// loads from.
func Scripts(p Partition) (map[string][]byte, error) {
	engines := EnginesFor(p.Store, p.Format, p.Dataset)
	out := make(map[string][]byte, len(engines)+1)
	for _, e := range engines {
		s, err := Generate(e, p)
		if err != nil {
			return nil, err
		}
		out[e+".sql"] = []byte(s)
	}
	if slices.Contains(engines, EngineRedshift) {
		rm, err := RedshiftCopyManifest(p)
		if err != nil {
			return nil, err
		}
		out[RedshiftManifestName] = rm
	}
	return out, nil
}
