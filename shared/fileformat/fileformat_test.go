package fileformat

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format      Format
		ext         string
		contentType string
		codecs      []Codec
		codecNames  string
	}{
		{Parquet, ".parquet", "application/vnd.apache.parquet", []Codec{Snappy, Zstd}, "snappy or zstd"},
		{NDJSON, ".ndjson.gz", "application/x-ndjson", []Codec{Gzip}, "gzip"},
		{"csv", "", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			if got := tt.format.Extension(); got != tt.ext {
				t.Errorf("Extension() = %q, want %q", got, tt.ext)
			}
			if got := tt.format.ContentType(); got != tt.contentType {
				t.Errorf("ContentType() = %q, want %q", got, tt.contentType)
			}
			if got := tt.format.Codecs(); !slices.Equal(got, tt.codecs) {
				t.Errorf("Codecs() = %v, want %v", got, tt.codecs)
			}
			var def Codec
			if len(tt.codecs) > 0 {
				def = tt.codecs[0]
			}
			if got := tt.format.DefaultCodec(); got != def {
				t.Errorf("DefaultCodec() = %q, want %q", got, def)
			}
			if got := tt.format.CodecNames(); got != tt.codecNames {
				t.Errorf("CodecNames() = %q, want %q", got, tt.codecNames)
			}
			for _, c := range []Codec{Snappy, Zstd, Gzip, "lzo", ""} {
				if got, want := tt.format.Takes(c), slices.Contains(tt.codecs, c); got != want {
					t.Errorf("Takes(%q) = %v, want %v", c, got, want)
				}
			}
		})
	}
	if got := Formats(); !slices.Equal(got, []Format{Parquet, NDJSON}) || got[0] != Default {
		t.Errorf("Formats() = %v, Default %s", got, Default)
	}
	if got := Names(); got != "parquet or ndjson" {
		t.Errorf("Names() = %q", got)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		want    Format
		wantErr bool
	}{
		{"parquet", Parquet, false},
		{"ndjson", NDJSON, false},
		{"csv", "", true},
		{"PARQUET", "", true},
		{"", "", true}, // the empty format is a destination's to default
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.name)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) = %q, %v", tt.name, got, err)
			}
			if err != nil && (!errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), `"`+tt.name+`"`)) {
				t.Errorf("error %v does not wrap ErrUnknown and name %q", err, tt.name)
			}
		})
	}
}

func TestCodec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format     Format
		configured Codec
		want       Codec
	}{
		{Parquet, "", Snappy},
		{Parquet, Snappy, Snappy},
		{Parquet, Zstd, Zstd},
		{Parquet, "lzo", "lzo"}, // not validated here: Takes is
		{NDJSON, "", Gzip},
		{NDJSON, Gzip, Gzip},
		{NDJSON, Snappy, Gzip}, // NDJSON is gzip whatever is configured
	}
	for _, tt := range tests {
		if got := tt.format.Codec(tt.configured); got != tt.want {
			t.Errorf("%s.Codec(%q) = %q, want %q", tt.format, tt.configured, got, tt.want)
		}
	}
}

func TestByExtension(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want Format
		ok   bool
	}{
		{"p/v1/events/dt=2026-03-09/part-00000.parquet", Parquet, true},
		{"p/v1/events/dt=2026-03-09/part-00001.ndjson.gz", NDJSON, true},
		{"p/v1/events/dt=2026-03-09/part-00001.ndjson", "", false},
		{"p/v1/events/dt=2026-03-09/_manifest.json", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got, ok := ByExtension(tt.key); got != tt.want || ok != tt.ok {
			t.Errorf("ByExtension(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
}
