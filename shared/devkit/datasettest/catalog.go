package datasettest

import (
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Catalog parses doc (a catalog file's YAML or JSON) into the catalog a
// test hands to what it builds. A doc that does not load fails t.
func Catalog(t testing.TB, doc []byte) *dataset.Set {
	t.Helper()
	s, err := dataset.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Example is the shipped example catalog (dataset.Example); an error fails t.
func Example(t testing.TB) *dataset.Set {
	t.Helper()
	s, err := dataset.Example()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
