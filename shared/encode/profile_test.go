package encode

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/fileformat"
)

func TestParseProfile(t *testing.T) {
	tests := []struct {
		in      string
		want    Profile
		wantErr string
	}{
		{"", ProfileCompatible, ""},
		{"compatible", ProfileCompatible, ""},
		{"compact", ProfileCompact, ""},
		{"Compact", 0, `parquet profile "Compact": unsupported (valid: compatible, compact)`},
		{"v2", 0, `parquet profile "v2": unsupported (valid: compatible, compact)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseProfile(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrUnsupported) {
					t.Fatalf("ParseProfile(%q) = %v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseProfile(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestProfileText(t *testing.T) {
	for _, p := range Profiles() {
		b, err := json.Marshal(struct{ P Profile }{p})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ P Profile }
		if err := json.Unmarshal(b, &back); err != nil || back.P != p {
			t.Fatalf("%s: %s -> %v, %v", p, b, back.P, err)
		}
		if !strings.Contains(string(b), `"`+p.String()+`"`) {
			t.Fatalf("%s marshals as %s", p, b)
		}
	}
	if _, err := json.Marshal(Profile(9)); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("marshal Profile(9): %v", err)
	}
	var p Profile
	if err := json.Unmarshal([]byte(`"fast"`), &p); err == nil || !strings.Contains(err.Error(), "valid: compatible, compact") {
		t.Fatalf("unmarshal fast: %v", err)
	}
}

func TestNewRefusesUnknownProfile(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
	_, err := New(fileformat.Parquet, io.Discard, ds, Options{Profile: Profile(9)})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "Profile(9)") {
		t.Fatalf("Profile(9): %v", err)
	}
	// NDJSON ignores the Parquet profile.
	if _, err := New(fileformat.NDJSON, io.Discard, ds, Options{Profile: Profile(9)}); err != nil {
		t.Fatalf("ndjson: %v", err)
	}
}
