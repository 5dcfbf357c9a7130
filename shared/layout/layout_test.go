package layout

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

func TestPrefixTemplate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tmpl    string
		want    string
		wantErr string
	}{
		{"daybook/{{.AccountID}}", "daybook/acct_x", ""},
		{"{{.Stage}}/exports/{{.AccountID}}/", "prod/exports/acct_x/", ""},
		{"{{.AccountID}}", "acct_x", ""},
		{"a/{{.AccountID}}/{{.Stage}}-x", "a/acct_x/prod-x", ""},
		{"Exports!_(2026).v-1/{{.AccountID}}", "Exports!_(2026).v-1/acct_x", ""},
		{"", "", "is empty"},
		{"/abs/{{.AccountID}}", "", "relative"},
		{"a//b/{{.AccountID}}", "", "segment 2 is empty"},
		{"a/./b/{{.AccountID}}", "", `"."`},
		{"a/../b/{{.AccountID}}", "", `".."`},
		{"../{{.AccountID}}", "", `".."`},
		{"a/{{.Tenant}}/{{.AccountID}}", "", "unknown placeholder {{.Tenant}}"},
		{"a/{{ .AccountID }}", "", "unknown placeholder"},
		{"a/{{.AccountID", "", "unbalanced"},
		{"a/}}/{{.AccountID}}", "", "unbalanced"},
		// C4: the account id is a whole segment of every prefix.
		{"exports", "", "must contain {{.AccountID}} as a whole segment"},
		{"{{.Stage}}/exports", "", "must contain {{.AccountID}} as a whole segment"},
		{"a/x{{.AccountID}}", "", `not part of "x{{.AccountID}}"`},
		{"a/{{.AccountID}}-{{.Stage}}", "", "must be a whole segment"},
		{"a/{{.AccountID}}/b/{{.AccountID}}x", "", "must be a whole segment"},
		// Characters outside the safe set.
		{"a b/{{.AccountID}}", "", `character ' '`},
		{"a*/{{.AccountID}}", "", `character '*'`},
		{"it's/{{.AccountID}}", "", `character '\''`},
		{"a?b/{{.AccountID}}", "", `character '?'`},
		{"a%2F/{{.AccountID}}", "", `character '%'`},
		{`a\b/{{.AccountID}}`, "", `character '\\'`},
		{"é/{{.AccountID}}", "", `character 'é'`},
		{"a\nb/{{.AccountID}}", "", `character '\n'`},
		{"a#b/{{.AccountID}}", "", `character '#'`},
	}
	for _, tc := range cases {
		t.Run(tc.tmpl, func(t *testing.T) {
			got, err := RenderPrefix(tc.tmpl, Vars{AccountID: "acct_x", Stage: "prod"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				verr := ValidatePrefix(tc.tmpl)
				var pe *PrefixError
				if !errors.As(verr, &pe) || pe.Prefix != tc.tmpl {
					t.Errorf("ValidatePrefix(%q) = %v, want a *PrefixError naming it", tc.tmpl, verr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("RenderPrefix = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for _, v := range []Vars{{AccountID: "x"}, {AccountID: "", Stage: "prod"}, {AccountID: "a/b", Stage: "prod"}, {AccountID: "x", Stage: "p*"}} {
		if p, err := RenderPrefix("a/{{.Stage}}/{{.AccountID}}", v); err == nil {
			t.Errorf("RenderPrefix with %+v = %q, want an error", v, p)
		}
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key, prefix string
		want        bool
	}{
		{"a/b/c", "a/b", true},
		{"a/b", "a/b", true},
		{"a/b/", "a/b", true},
		{"a/b", "a/b/", true},
		{"a/bc", "a/b", false},
		{"a/bc/d", "a/b", false},
		{"a", "a/b", false},
		{"b/a", "a", false},
		{"a/b/v1/events/dt=2026-01-01/part-00000.parquet", "a/b", true},
	}
	for _, c := range cases {
		if got := Within(c.key, c.prefix); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.key, c.prefix, got, c.want)
		}
	}
}

// TestKeyLength checks S3's 1,024-byte limit at the boundary: the longest key
// is the NDJSON data file or the load script of the longest engine name,
// whichever is longer, under the longest dataset.
func TestKeyLength(t *testing.T) {
	t.Parallel()
	datasets := []string{"events", "daily_stats"}
	base := "p/acct_x"
	tail := len(LongestKey(base, datasets)) - len(base)
	// A prefix that makes the longest key exactly MaxKeyBytes long passes;
	// one byte more is refused, naming the prefix and the excess.
	fits := strings.Repeat("a", MaxKeyBytes-tail-len("/acct_x")) + "/acct_x"
	if n := len(LongestKey(fits, datasets)); n != MaxKeyBytes {
		t.Fatalf("longest key under the fitting prefix is %d bytes", n)
	}
	if err := CheckKeyLength(fits, datasets); err != nil {
		t.Errorf("a prefix whose longest key is %d bytes: %v", MaxKeyBytes, err)
	}
	over := "a" + fits
	err := CheckKeyLength(over, datasets)
	var pe *PrefixError
	if !errors.As(err, &pe) || pe.Prefix != over || !strings.Contains(err.Error(), "1025 bytes") || !strings.Contains(err.Error(), "shorten the prefix by 1") {
		t.Fatalf("CheckKeyLength one byte over = %v", err)
	}
	if !strings.Contains(err.Error(), "daily_stats") {
		t.Errorf("the longest key is under the longest dataset: %v", err)
	}
	// Every key a writer makes is at most the longest one.
	d := civil.MustParse("2026-09-05")
	longest := len(LongestKey(base, datasets))
	for _, ds := range datasets {
		for _, k := range []string{
			DataKey(base, ds, d, 99999, fileformat.NDJSON.Extension()), DataKey(base, ds, d, 0, fileformat.Parquet.Extension()),
			SliceDataKey(base, ds, d, 999, 99999, fileformat.NDJSON.Extension()),
			ManifestKey(base, ds, d), SuccessKey(base, ds, d), LoadKey(base, ds, d, "snowflake"), SchemaKey(base, ds),
			DeliveryManifestKey(base, d), ReadmeKey(base),
		} {
			if len(k) > longest {
				t.Errorf("key %q (%d bytes) is longer than LongestKey (%d)", k, len(k), longest)
			}
			if !Within(k, base) {
				t.Errorf("key %q is not under %q", k, base)
			}
		}
	}
	// Without datasets the account-level keys still count.
	if got := LongestKey(base, nil); len(got) != len(DeliveryManifestKey(base, d)) || !strings.Contains(got, "/_manifests/") {
		t.Errorf("LongestKey without datasets = %q", got)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	d := civil.MustParse("2026-09-05")
	p := "daybook/acct_x/"
	cases := []struct{ got, want string }{
		{PartitionPrefix(p, "events", d), "daybook/acct_x/v1/events/dt=2026-09-05/"},
		{DataKey(p, "events", d, 0, fileformat.Parquet.Extension()), "daybook/acct_x/v1/events/dt=2026-09-05/part-00000.parquet"},
		{DataKey("daybook/acct_x", "events", d, 12, fileformat.NDJSON.Extension()), "daybook/acct_x/v1/events/dt=2026-09-05/part-00012.ndjson.gz"},
		{SliceDataKey(p, "events", d, 3, 1, fileformat.Parquet.Extension()), "daybook/acct_x/v1/events/dt=2026-09-05/part-s0003-00001.parquet"},
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
		{SliceDataKey(p, "events", d, 2, 0, fileformat.Parquet.Extension()), true},
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

func TestValidateRendered(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		prefix string
		ok     bool
	}{
		{"tenants/acct_7f3a9c", true},
		{"daybook/acct_abc/prod", true},
		{"", false},
		{"/abs", false},
		{"a//b", false},
		{"a/../b", false},
		{"a/{{.AccountID}}", false},
		{"a b", false},
	} {
		err := ValidateRendered(tt.prefix)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateRendered(%q) = %v, want ok=%v", tt.prefix, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.prefix)) {
			t.Errorf("error %v does not name the prefix", err)
		}
	}
}

// TestLongestKeyCoversEveryKey: every exported function of this package
// that makes a key (its name ends in Key, it returns a string) is called
// here with its widest arguments, and none is longer than LongestKey. A new
// key function fails the test until it is added here, and to LongestKey
// where it is longer. The Iceberg table's files (TableFileKey) were
// missing from LongestKey.
func TestLongestKeyCoversEveryKey(t *testing.T) {
	t.Parallel()
	base, ds := "p/acct_x", "daily_stats"
	d := civil.MustParse("2026-09-05")
	longest := len(LongestKey(base, []string{ds}))
	ext := fileformat.NDJSON.Extension()
	widest := map[string]string{
		"DataKey":             DataKey(base, ds, d, maxPartNumber, ext),
		"SliceDataKey":        SliceDataKey(base, ds, d, maxSliceNumber, maxPartNumber, ext),
		"ManifestKey":         ManifestKey(base, ds, d),
		"SuccessKey":          SuccessKey(base, ds, d),
		"LoadKey":             LoadKey(base, ds, d, strings.Repeat("e", MaxEngineNameLen)),
		"SchemaKey":           SchemaKey(base, ds),
		"ContractSchemaKey":   ContractSchemaKey(base, "v1", ds),
		"ReadmeKey":           ReadmeKey(base),
		"DeliveryManifestKey": DeliveryManifestKey(base, d),
		"ChangeKey":           ChangeKey(base, time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC), ds, d, 1<<62),
		"TableFileKey":        TableFileKey(base, ds, strings.Repeat("t", MaxTableFileNameLen)),
		"LongestKey":          LongestKey(base, []string{ds}),
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range af.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || !strings.HasSuffix(fn.Name.Name, "Key") {
				continue
			}
			if r := fn.Type.Results; r == nil || len(r.List) != 1 || types.ExprString(r.List[0].Type) != "string" {
				continue
			}
			if _, ok := widest[fn.Name.Name]; !ok {
				t.Errorf("%s: %s makes keys and is not checked against LongestKey here", f, fn.Name.Name)
			}
		}
	}
	for name, k := range widest {
		if len(k) > longest {
			t.Errorf("%s: %q (%d bytes) is longer than LongestKey (%d)", name, k, len(k), longest)
		}
	}
}

// A dataset at a later contract has its folder and schema under that
// contract's root; the account-level documents stay at v1/.
func TestContractTwoKeys(t *testing.T) {
	t.Parallel()
	d := civil.MustParse("2026-09-05")
	for _, c := range []struct{ got, want string }{
		{PartitionPrefix("p/acct_x", "events.v2", d), "p/acct_x/v2/events/dt=2026-09-05/"},
		{SuccessKey("p/acct_x", "events.v2", d), "p/acct_x/v2/events/dt=2026-09-05/_SUCCESS"},
		{SchemaKey("p/acct_x", "events.v2"), "p/acct_x/v2/_schemas/events.json"},
		{SchemaKey("p/acct_x", "events"), "p/acct_x/v1/_schemas/events.json"},
		{TableFileKey("p/acct_x", "events.v2", "v1.metadata.json"), "p/acct_x/v2/events/metadata/v1.metadata.json"},
		{ReadmeKey("p/acct_x"), "p/acct_x/v1/README.md"},
		{DeliveryManifestKey("p/acct_x", d), "p/acct_x/v1/_manifests/dt=2026-09-05/manifest.json"},
		{ChangeKey("p/acct_x", time.Date(2026, 9, 6, 1, 2, 3, 0, time.UTC), "events.v2", d, 3), "p/acct_x/v1/_changes/20260906T010203Z_events_2026-09-05_0000000003.json"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
