// Package duckcheck is test support: DuckDB as the independent reader that
// checks delivered files the way a customer's engine would. Only tests import
// it (DuckDB needs cgo and must never reach a Lambda binary).
package duckcheck

import (
	"database/sql"
	"fmt"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Open returns an in-memory DuckDB with the json and parquet extensions
// loaded, on one connection (a script's transaction must stay on it), closed
// when the test ends.
func Open(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`SET threads = 1; LOAD json; LOAD parquet`); err != nil {
		t.Fatal(err)
	}
	return db
}

// Type is the type DuckDB must report for a declared column type.
func Type(ty dataset.Type) string {
	switch ty.Kind {
	case dataset.KindDate:
		return "DATE"
	case dataset.KindTimestamp:
		return "TIMESTAMP WITH TIME ZONE"
	case dataset.KindInt64:
		return "BIGINT"
	case dataset.KindDouble:
		return "DOUBLE"
	case dataset.KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", ty.Precision, ty.Scale)
	case dataset.KindBoolean:
		return "BOOLEAN"
	case dataset.KindString:
		return "VARCHAR"
	case dataset.KindJSON:
		return "JSON"
	case dataset.KindBinary:
		return "BLOB"
	case dataset.KindList:
		return Type(ty.ElemType()) + "[]"
	}
	return "?"
}
