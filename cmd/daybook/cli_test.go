package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestSQLCommand(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"sql", "--dataset", "events", "--engine", "duckdb", "--day", "2026-11-20"},
			[]string{"placeholder partition", "DELETE FROM", "DATE '2026-11-20'", "TIMESTAMPTZ", "read_parquet"}},
		{[]string{"sql", "--dataset", "profiles", "--engine", "snowflake", "--current-state"},
			[]string{"ROW_NUMBER() OVER", "profile_id", "last_seen_at DESC"}},
		{[]string{"sql", "--dataset", "daily_stats", "--engine", "athena"},
			[]string{"CREATE EXTERNAL TABLE IF NOT EXISTS", "PARTITIONED BY"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), tt.args, &out); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestCLIRefusesBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sql", "--dataset", "visits", "--engine", "duckdb"}, `"visits"`},
		{[]string{"sql", "--dataset", "events", "--engine", "oracle"}, `"oracle"`},
		{[]string{"sql", "--dataset", "events", "--engine", "duckdb", "--day", "2026-02-30"}, `2026-02-30`},
		{[]string{"requeue", "--account", "acct_a", "--dataset", "events", "--from", "2026-11-10", "--to", "2026-11-01"}, `to "2026-11-01" is before from "2026-11-10"`},
		{[]string{"reexport", "--dataset", "events", "--day", "2026-11-01"}, "account_id is required"},
		{[]string{"no-such-command"}, `unknown command "no-such-command"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := run(context.Background(), tt.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}
