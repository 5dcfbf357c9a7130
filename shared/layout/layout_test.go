package layout

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

func TestPrefixTemplate(t *testing.T) {
	cases := []struct {
		tmpl    string
		want    string
		wantErr string
	}{
		{"daybook/{{.AccountID}}", "daybook/acct_x", ""},
		{"{{.Stage}}/exports/{{.AccountID}}/", "prod/exports/acct_x/", ""},
		{"exports", "exports", ""},
		{"a/{{.AccountID}}-{{.Stage}}", "a/acct_x-prod", ""},
		{"", "", "empty"},
		{"/abs/{{.AccountID}}", "", "relative"},
		{"a//b", "", "segment 2 is empty"},
		{"a/./b", "", `"."`},
		{"a/../b", "", `".."`},
		{"..", "", `".."`},
		{"a/{{.Tenant}}", "", "unknown placeholder {{.Tenant}}"},
		{"a/{{ .AccountID }}", "", "unknown placeholder"},
		{"a/{{.AccountID", "", "unbalanced"},
		{"a/}}", "", "unbalanced"},
	}
	for _, tc := range cases {
		t.Run(tc.tmpl, func(t *testing.T) {
			got, err := RenderPrefix(tc.tmpl, Vars{AccountID: "acct_x", Stage: "prod"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if verr := ValidatePrefix(tc.tmpl); verr == nil {
					t.Errorf("ValidatePrefix accepted %q", tc.tmpl)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("RenderPrefix = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := RenderPrefix("a/{{.Stage}}", Vars{AccountID: "x"}); err == nil {
		t.Error("empty stage rendered")
	}
}

func TestKeys(t *testing.T) {
	d := civil.MustParse("2026-09-05")
	p := "daybook/acct_x/"
	cases := []struct{ got, want string }{
		{PartitionPrefix(p, "events", d), "daybook/acct_x/v1/events/dt=2026-09-05/"},
		{DataKey(p, "events", d, 0, fileformat.Parquet.Extension()), "daybook/acct_x/v1/events/dt=2026-09-05/part-00000.parquet"},
		{DataKey("daybook/acct_x", "events", d, 12, fileformat.NDJSON.Extension()), "daybook/acct_x/v1/events/dt=2026-09-05/part-00012.ndjson.gz"},
		{ManifestKey(p, "events", d), "daybook/acct_x/v1/events/dt=2026-09-05/_manifest.json"},
		{SuccessKey(p, "events", d), "daybook/acct_x/v1/events/dt=2026-09-05/_SUCCESS"},
		{LoadKey(p, "events", d, "athena"), "daybook/acct_x/v1/events/dt=2026-09-05/_load/athena.sql"},
		{DeliveryManifestKey(p, d), "daybook/acct_x/v1/_manifests/dt=2026-09-05/manifest.json"},
		{ContractPrefix(p), "daybook/acct_x/v1/"},
		{ContractPrefix("daybook/acct_x"), "daybook/acct_x/v1/"},
		{ReadmeKey(p), "daybook/acct_x/v1/README.md"},
		{SchemaKey("daybook/acct_x", "events"), "daybook/acct_x/v1/_schemas/events.json"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	isData := []struct {
		key  string
		want bool
	}{
		{DataKey(p, "events", d, 0, fileformat.Parquet.Extension()), true},
		{DataKey(p, "events", d, 3, fileformat.NDJSON.Extension()), true},
		{ManifestKey(p, "events", d), false},
		{SuccessKey(p, "events", d), false},
		{LoadKey(p, "events", d, "duckdb"), false},
		{DeliveryManifestKey(p, d), false},
		{ReadmeKey(p), false},
		{SchemaKey(p, "events"), false},
		{"daybook/v1/events/part-00000.parquet", false},
		{"part-00000.parquet", false},
		{"a/dt=2026-09-05/part-", false},
	}
	for _, c := range isData {
		if got := IsDataKey(c.key); got != c.want {
			t.Errorf("IsDataKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}
