//go:build !noduckdb

package main

import (
	"path/filepath"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
)

// TestParquetProfileOfTheAccount exports the same day for an account with no
// profile, with "compatible" and with "compact", and reads each file's footer
// and page headers: the first two hold only what every reader decodes, the
// compact one version 2 pages and delta encodings.
func TestParquetProfileOfTheAccount(t *testing.T) {
	for _, tc := range []struct {
		profile    string
		compatible bool
	}{
		{"", true},
		{string(fileformat.ProfileCompatible), true},
		{string(fileformat.ProfileCompact), false},
	} {
		t.Run("profile="+tc.profile, func(t *testing.T) {
			e := newEnv(t, envOpts{datasets: []string{"events"}, profile: tc.profile})
			e.insert("events", genRows("events", testDay, 40)...)
			if row := e.export("events", testDay); row.Generation != 1 {
				t.Fatalf("row %+v", row)
			}
			dir := e.download()
			key := layout.DataKey("", "events", testDay, 0, fileformat.Parquet.Extension())
			path := filepath.Join(dir, filepath.FromSlash(key[len("/"):]))
			chunks, err := parquetreaders.Footer(path)
			if err != nil {
				t.Fatal(err)
			}
			bad := parquetreaders.Incompatibilities(chunks)
			if tc.compatible && len(bad) > 0 {
				t.Fatalf("profile %q wrote what some readers cannot decode: %v", tc.profile, bad)
			}
			if !tc.compatible && len(bad) == 0 {
				t.Fatalf("profile %q wrote no version 2 page or delta encoding: the setting was not applied", tc.profile)
			}
		})
	}
}
