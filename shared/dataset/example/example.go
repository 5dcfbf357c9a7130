// Package example holds the shipped example catalog (catalog.yaml): the
// demo's three datasets, which every process uses when its deployment names
// no catalog of its own, and the file the tests and the README start from.
package example

import _ "embed"

//go:embed catalog.yaml
var catalog []byte

// YAML returns a copy of the example catalog file's bytes.
func YAML() []byte { return append([]byte(nil), catalog...) }
