package dataset_test

import (
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// TestFiftyDatasets: a generated catalog of 50 datasets loads, every
// dataset with its queries written for both dialects.
func TestFiftyDatasets(t *testing.T) {
	t.Parallel()
	s, err := dataset.Parse(datasettest.GeneratedCatalog(50))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Names()) != 50 {
		t.Fatalf("%d datasets", len(s.Names()))
	}
	for _, d := range s.Datasets() {
		for _, dialect := range dataset.Dialects {
			if _, err := d.FingerprintQuery(dialect); err != nil || d.Queries[dialect] == "" {
				t.Errorf("%s %s: query %q, fingerprint %v", d.Name, dialect, d.Queries[dialect], err)
			}
		}
	}
}
