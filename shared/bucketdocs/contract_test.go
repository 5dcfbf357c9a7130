package bucketdocs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// A dataset at contract v2 has its schema under v2/_schemas/ (with contract
// v2 in it), and the README says where its files are now and that its v1/
// folder stays in place and is no longer written; a v1 dataset beside it
// keeps v1/.
func TestContractTwoDocuments(t *testing.T) {
	t.Parallel()
	s, err := dataset.Example()
	if err != nil {
		t.Fatal(err)
	}
	ds := s.Datasets()
	ds[0].Contract = "v2" // events
	files, err := Files(Input{Bucket: "b", Prefix: "p", Format: "parquet", TimeZone: "UTC", Datasets: ds})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]File{}
	for _, f := range files {
		keys[f.Key] = f
	}
	for _, k := range []string{"p/v2/_schemas/events.json", "p/v1/_schemas/profiles.json", "p/v1/README.md"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("no %s in %v", k, keys)
		}
	}
	if _, ok := keys["p/v1/_schemas/events.json"]; ok {
		t.Error("the v2 dataset's schema is (re)written under v1/_schemas/")
	}
	var doc SchemaDoc
	if err := json.Unmarshal(keys["p/v2/_schemas/events.json"].Body, &doc); err != nil || doc.Contract != "v2" {
		t.Errorf("v2 schema document: contract %q, err %v", doc.Contract, err)
	}
	readme := string(keys["p/v1/README.md"].Body)
	for _, want := range []string{
		"- **Contract** `v2`: the files are in `p/v2/events/`.",
		"- **Schema**: version 1, `p/v2/_schemas/events.json`.",
		"- **Earlier contracts**: `p/v1/events/` (and its `_schemas/events.json`) stays in place and is no longer written",
		"- **Contract** `v1`: the files are in `p/v1/profiles/`.",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q", want)
		}
	}
}
