// Package fileformat names the delivery file formats, Parquet and gzipped
// NDJSON, and owns everything that goes with a format's name: its file
// extension, its content type, the compression codecs it takes and its
// default codec. Every other package spells a format or a codec through this
// one: accounts configure them, the encoders write them, the layout names
// files by their extension, the load scripts and the verifier read them.
//
// The package has no dependencies, so the sweeper, the CLI and the account
// records can use it without linking an encoder.
package fileformat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Format is a delivery file format, as a destination configures it and a
// manifest records it.
type Format string

// The formats.
const (
	Parquet Format = "parquet"
	NDJSON  Format = "ndjson" // always gzip-compressed
)

// Default is the format of a destination that names none.
const Default = Parquet

// Codec is a compression codec of a format.
type Codec string

// The codecs. Snappy is Parquet's default: every engine reads it and it costs
// little CPU in Lambda; zstd makes smaller files for a bit more CPU. NDJSON is
// always gzip.
const (
	Snappy Codec = "snappy"
	Zstd   Codec = "zstd"
	Gzip   Codec = "gzip"
)

// ErrUnknown is wrapped by Parse's error for a name that is not a format.
var ErrUnknown = errors.New("unknown file format")

type spec struct {
	ext         string
	contentType string
	codecs      []Codec // the first is the default
}

// formats lists every format, Default first.
var formats = []Format{Parquet, NDJSON}

var specs = map[Format]spec{
	Parquet: {ext: ".parquet", contentType: "application/vnd.apache.parquet", codecs: []Codec{Snappy, Zstd}},
	NDJSON:  {ext: ".ndjson.gz", contentType: "application/x-ndjson", codecs: []Codec{Gzip}},
}

// Formats returns every format, Default first.
func Formats() []Format { return append([]Format(nil), formats...) }

// Parse returns the format called name. The name must be given: a
// destination's empty format means Default, which the destination applies.
func Parse(name string) (Format, error) {
	f := Format(name)
	if _, ok := specs[f]; !ok {
		return "", fmt.Errorf("%w %q (want %s)", ErrUnknown, name, Names())
	}
	return f, nil
}

// ByExtension returns the format of a file from its name or key: the format
// whose extension ends it.
func ByExtension(name string) (Format, bool) {
	for _, f := range formats {
		if strings.HasSuffix(name, specs[f].ext) {
			return f, true
		}
	}
	return "", false
}

// Extension returns the file name suffix: ".parquet" or ".ndjson.gz"
// (empty for an unknown format).
func (f Format) Extension() string { return specs[f].ext }

// ContentType returns the MIME type an object of the format is stored with
// (empty for an unknown format).
func (f Format) ContentType() string { return specs[f].contentType }

// Codecs returns the codecs the format takes, its default first.
func (f Format) Codecs() []Codec { return append([]Codec(nil), specs[f].codecs...) }

// DefaultCodec returns the codec used when a destination names none: snappy
// for Parquet, gzip for NDJSON (empty for an unknown format).
func (f Format) DefaultCodec() Codec {
	if cs := specs[f].codecs; len(cs) > 0 {
		return cs[0]
	}
	return ""
}

// Codec returns the codec files of the format are written with when a
// destination configures configured: configured itself, or DefaultCodec when
// it is empty. A format with a single codec always uses it (NDJSON is gzip
// whatever is configured). Codec does not validate configured; Takes does.
func (f Format) Codec(configured Codec) Codec {
	if cs := specs[f].codecs; len(cs) == 1 {
		return cs[0]
	}
	if configured == "" {
		return f.DefaultCodec()
	}
	return configured
}

// Takes reports whether c is one of the format's codecs.
func (f Format) Takes(c Codec) bool { return slices.Contains(specs[f].codecs, c) }

// Names lists the formats for a message: "parquet or ndjson".
func Names() string { return orList(formats) }

// CodecNames lists the format's codecs for a message: "snappy or zstd".
func (f Format) CodecNames() string { return orList(specs[f].codecs) }

// orList joins items as "a", "a or b", "a, b or c".
func orList[T ~string](items []T) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = string(it)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// ParquetProfile names how Parquet pages are laid out and encoded (package
// encode implements them): ProfileCompatible, the default, writes what every
// common reader decodes; ProfileCompact writes smaller files with version 2
// data pages and delta encodings, for readers known to support them.
type ParquetProfile string

// Parquet profiles.
const (
	ProfileCompatible ParquetProfile = "compatible"
	ProfileCompact    ParquetProfile = "compact"
)

// Valid reports whether p is a profile; "" (the default) is valid.
func (p ParquetProfile) Valid() bool {
	return p == "" || p == ProfileCompatible || p == ProfileCompact
}
