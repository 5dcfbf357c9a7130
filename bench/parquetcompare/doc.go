// Package parquetcompare benchmarks the encoder daybook ships
// (shared/encode, on github.com/parquet-go/parquet-go) against
// github.com/xitongsys/parquet-go v1.6.2, which it replaces, on the same
// synthetic events day, so the decision stays checkable:
//
//	go test ./bench/parquetcompare -run '^$' -bench . -benchtime 1x -benchmem
//
// BenchmarkBytesVsDuckDB also compares the file sizes of both Parquet
// profiles with DuckDB's Parquet writer on the same rows and codec, and
// prints them as a table; BenchmarkEncodeCPUVsDuckDB compares the CPU time
// of the compatible profile's encode with DuckDB's single-thread one on one
// core, in rows per CPU-second. The end-to-end export from PostgreSQL is
// measured in functions/exporter (BenchmarkExportPostgres).
//
// The package has no non-test code beyond this comment.
package parquetcompare
