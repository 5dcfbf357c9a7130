package encode

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/fileformat"
)

// Profile chooses how Parquet pages are laid out and encoded. It never
// changes a column's physical or logical type, so files of either profile
// load into the same tables.
//
// ProfileCompatible, the zero value and the default, writes only what every
// mainstream reader decodes, the same subset Spark, pyarrow and DuckDB write by
// default:
//
//   - data pages of version 1 only (never DATA_PAGE_V2);
//   - string and JSON columns dictionary-encoded (RLE_DICTIONARY data pages and
//     a PLAIN dictionary page); when a column chunk's dictionary grows past
//     DictionaryLimit bytes, the rest of that row group's column is written
//     PLAIN (pages already written stay dictionary-encoded, as parquet-mr and
//     Arrow do). A column the dataset declares high-cardinality
//     ("dictionary": false, such as an id) is PLAIN from its first value: its
//     dictionary would only fill to the limit in every row group and be
//     dropped (see dictionaryEncoded);
//   - every other column PLAIN (booleans bit-packed, as PLAIN defines them);
//   - definition levels of nullable columns RLE;
//   - a null count, and a minimum and maximum unless every value is NULL, in
//     every column chunk and page header (decimals wider than 18 digits
//     ordered as numbers, see signedNode).
//
// Pages are compressed with the fast settings of the codec: Snappy blocks from
// S2's fast encoder, zstd at its fastest level (see pageCodec).
//
// ProfileCompact writes the same columns, dictionaries included, with
// DATA_PAGE_V2 pages and DELTA_BINARY_PACKED for every INT32 and INT64 column
// (dates, timestamps, integers, decimals up to 18 digits), and compresses
// harder (S2's "better" Snappy encoder, zstd's default level), for smaller
// files.
// It is for readers known to support them: readers lacking one or the other
// are common (Spark's vectorized reader before 3.3, Iceberg's vectorized
// readers, Azure Synapse, StarRocks, parquetjs ...).
type Profile uint8

// Parquet profiles.
const (
	ProfileCompatible Profile = iota
	ProfileCompact
)

// DictionaryLimit is the size in bytes of a column chunk's dictionary values
// past which the encoder stops adding to the dictionary and writes the rest of
// the row group's column PLAIN, in both profiles: the default of parquet-mr
// and Arrow, so a unique column (an id) costs a bounded dictionary, not one
// entry per row. The check runs whenever a column has taken a quarter of the
// limit in value bytes since its last page, so a dictionary ends within a
// quarter of the limit past it. parquet-go implements the fallback
// (parquet.DictionaryMaxBytes); the encoder only ends pages often enough for
// it to act.
const DictionaryLimit = 1 << 20

var profileNames = [...]string{ProfileCompatible: string(fileformat.ProfileCompatible), ProfileCompact: string(fileformat.ProfileCompact)}

// String returns the configuration name, e.g. "compatible".
func (p Profile) String() string {
	if int(p) < len(profileNames) {
		return profileNames[p]
	}
	return fmt.Sprintf("Profile(%d)", uint8(p))
}

func (p Profile) valid() bool { return int(p) < len(profileNames) }

// ParseProfile parses a configured profile name. The empty string is the
// default, ProfileCompatible.
func ParseProfile(s string) (Profile, error) {
	if s == "" {
		return ProfileCompatible, nil
	}
	for i, name := range profileNames {
		if s == name {
			return Profile(i), nil
		}
	}
	return 0, fmt.Errorf("parquet profile %q: %w (valid: %s)", s, ErrUnsupported, strings.Join(profileNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (p Profile) MarshalText() ([]byte, error) {
	if !p.valid() {
		return nil, fmt.Errorf("parquet profile %d: %w", uint8(p), ErrUnsupported)
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseProfile.
func (p *Profile) UnmarshalText(b []byte) error {
	v, err := ParseProfile(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
