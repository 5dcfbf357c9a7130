package datasettest

import (
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Use makes the catalog doc (a catalog file's YAML or JSON) the process's
// catalog (dataset.Use) until t ends, then the shipped example again, and
// returns it. A doc that does not load fails t.
func Use(t testing.TB, doc []byte) *dataset.Set {
	t.Helper()
	s, err := dataset.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := dataset.Example()
	if err != nil {
		t.Fatal(err)
	}
	dataset.Use(s)
	t.Cleanup(func() { dataset.Use(ex) })
	return s
}
