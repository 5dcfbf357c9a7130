// Command duckdbcli is the `duckdb` command for tests that run documented
// shell lines (the bucket README's Quick start) as written: DuckDB itself,
// through the Go binding the tests already link, since no DuckDB CLI
// package is installed here. It takes the CLI's forms those lines use:
//
//	duckdb [DATABASE] [-c SQL]
//
// With -c it runs SQL; otherwise it reads the statements from stdin, as
// `... | duckdb exports.duckdb` does. Rows a statement returns are printed
// tab-separated. An error is printed on stderr and exits 1, as the CLI's
// does for piped input.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	path, script := "", ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c" && i+1 < len(args):
			script = args[i+1]
			i++
		case strings.HasPrefix(a, "-"):
			return fmt.Errorf("duckdbcli: unsupported option %s (only [DATABASE] [-c SQL])", a)
		default:
			path = a
		}
	}
	if script == "" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		script = string(b)
	}
	db, err := sql.Open("duckdb", path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(context.Background(), script)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = fmt.Sprint(v)
		}
		fmt.Fprintln(stdout, strings.Join(cells, "\t"))
	}
	return rows.Err()
}
