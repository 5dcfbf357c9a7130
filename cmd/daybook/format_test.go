package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
)

func TestDecodeAccountNamesLineAndColumn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"syntax", "{\n  \"name\": \"a\",\n  \"enabled\": tru\n}", "acct.json:3:17: invalid character '\\n' in literal true"},
		{"trailing comma", "{\n  \"name\": \"a\",\n}", "acct.json:3:1: invalid character '}'"},
		{"wrong type", "{\n  \"name\": \"a\",\n  \"destination\": {\"bucket\": 7}\n}", "acct.json:3:19: destination.bucket: the number 7, want a string"},
		{"unknown field", "{\n  \"name\": \"a\",\n  \"bukcet\": \"b\"\n}", `acct.json:3:3: bukcet: unknown field; valid fields here: created_at, datasets, destination, enabled, id, name,`},
		{"case folded", `{"Name": "a"}`, `acct.json:1:2: Name: unknown field`},
		{"bad date", "{\n  \"start_date\": \"2026-13-01\"\n}", `acct.json:2:3: start_date: the string "2026-13-01" is not a date, YYYY-MM-DD (e.g. "2026-11-01") (day "2026-13-01": want YYYY-MM-DD)`},
		{"a list", "[]", `acct.json:1:1: the account: a list, want an object ({...})`},
		{"truncated", "{\n  \"name\": \"a\"", "acct.json:2:14: the file ends before the JSON document does"},
		{"empty", "", "acct.json:1:1: the file ends before the JSON document does"},
		{"two documents", "{}\n{}", "acct.json:2:2: unexpected { after the JSON document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeAccount("acct.json", []byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	env := map[string]map[string]string{}
	if err := decodeJSON("env.json", []byte(`{"ExporterFunction": 7}`), &env); err == nil || !strings.Contains(err.Error(), "env.json:1:22: ExporterFunction: a JSON number, want an object ({...})") {
		t.Errorf("env file of the wrong shape: %v", err)
	}
}

func TestLineCol(t *testing.T) {
	t.Parallel()
	b := []byte("ab\ncde\n\nf")
	for _, tt := range []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 3}, {8, 4, 1}, {99, 4, 2}, {-1, 1, 1}} {
		if l, c := lineCol(b, tt.off); l != tt.line || c != tt.col {
			t.Errorf("lineCol(%d) = %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}

func TestWriteBackID(t *testing.T) {
	t.Parallel()
	const id = "acct_abcdefghijklmnop"
	tests := []struct {
		name, in, want string
	}{
		{"pretty", "{\n  \"name\": \"A\",\n  \"start_date\": \"2026-01-01\"\n}\n",
			"{\n  \"id\": \"acct_abcdefghijklmnop\",\n  \"name\": \"A\",\n  \"start_date\": \"2026-01-01\"\n}\n"},
		{"tabs and blank line", "{\n\n\t\"name\": \"A\"\n}", "{\n\t\"id\": \"acct_abcdefghijklmnop\",\n\n\t\"name\": \"A\"\n}"},
		{"one line", `{"name":"A"}`, `{ "id": "acct_abcdefghijklmnop","name":"A"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "a.json")
			if err := os.WriteFile(p, []byte(tt.in), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := writeBackFields(p, []byte(tt.in), fileFields{id: id}); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			if string(got) != tt.want {
				t.Errorf("file:\n%s\nwant:\n%s", got, tt.want)
			}
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600 kept", st.Mode().Perm())
			}
			entries, _ := os.ReadDir(filepath.Dir(p))
			if len(entries) != 1 {
				t.Errorf("temporary files left: %v", entries)
			}
		})
	}
	if err := writeBackFields("-", []byte("{}"), fileFields{id: id}); err == nil {
		t.Error("stdin: no error")
	}
	p := filepath.Join(t.TempDir(), "a.json")
	in := `{"id": "", "name": "A"}`
	os.WriteFile(p, []byte(in), 0o644)
	if err := writeBackFields(p, []byte(in), fileFields{id: id}); err == nil {
		t.Error("a file with an empty id was rewritten into an ambiguous one")
	}
	if got, _ := os.ReadFile(p); string(got) != in {
		t.Errorf("refused write-back changed the file: %s", got)
	}
}

// TestWriteBackExternalID: a generated external id lands after role_arn,
// indented like it, or replaces an empty external_id; with an id, both.
func TestWriteBackExternalID(t *testing.T) {
	t.Parallel()
	const (
		id  = "acct_abcdefghijklmnop"
		ext = "daybook-aaaabbbbccccddddeeeeffffgggghhhh"
	)
	tests := []struct {
		name, in, want string
		add            fileFields
	}{
		{"pretty, role last", "{\n  \"name\": \"A\",\n  \"destination\": {\n    \"bucket\": \"b\",\n    \"role_arn\": \"arn:aws:iam::123456789012:role/r\"\n  }\n}\n",
			"{\n  \"name\": \"A\",\n  \"destination\": {\n    \"bucket\": \"b\",\n    \"role_arn\": \"arn:aws:iam::123456789012:role/r\",\n    \"external_id\": \"" + ext + "\"\n  }\n}\n",
			fileFields{externalID: ext}},
		{"pretty, with id", "{\n  \"destination\": {\n    \"role_arn\": \"arn:aws:iam::123456789012:role/r\",\n    \"bucket\": \"b\"\n  }\n}\n",
			"{\n  \"id\": \"" + id + "\",\n  \"destination\": {\n    \"role_arn\": \"arn:aws:iam::123456789012:role/r\",\n    \"external_id\": \"" + ext + "\",\n    \"bucket\": \"b\"\n  }\n}\n",
			fileFields{id: id, externalID: ext}},
		{"one line", `{"destination":{"role_arn":"arn:aws:iam::123456789012:role/r","bucket":"b"},"name":"A"}`,
			`{"destination":{"role_arn":"arn:aws:iam::123456789012:role/r", "external_id": "` + ext + `","bucket":"b"},"name":"A"}`,
			fileFields{externalID: ext}},
		{"empty external_id", `{"destination": {"external_id": "", "role_arn": "arn:aws:iam::123456789012:role/r"}}`,
			`{"destination": {"external_id": "` + ext + `", "role_arn": "arn:aws:iam::123456789012:role/r"}}`,
			fileFields{externalID: ext}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "a.json")
			if err := os.WriteFile(p, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := writeBackFields(p, []byte(tt.in), tt.add); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(p); string(got) != tt.want {
				t.Errorf("file:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "a.json")
	in := `{"destination": {"bucket": "b"}}`
	os.WriteFile(p, []byte(in), 0o644)
	if err := writeBackFields(p, []byte(in), fileFields{externalID: ext}); err == nil {
		t.Error("an external id was written without a role_arn")
	}
	if got, _ := os.ReadFile(p); string(got) != in {
		t.Errorf("refused write-back changed the file: %s", got)
	}
}

func TestCheckBucketPattern(t *testing.T) {
	t.Parallel()
	acct := func(bucket, role string) account.Account {
		return account.Account{Destination: account.Destination{Bucket: bucket, RoleARN: role}}
	}
	for _, tt := range []struct {
		a    account.Account
		want string
	}{
		{acct("daybook-exports-x", ""), ""},
		{acct("acme-bucket", ""), `destination.bucket "acme-bucket"`},
		{acct("acme-bucket", "arn:aws:iam::123456789012:role/daybook-export-acme"), ""}, // a role: account.Validate's rule
	} {
		err := checkBucketPattern(tt.a, "daybook-exports-*")
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkBucketPattern(%+v) = %v, want %q", tt.a.Destination, err, tt.want)
		}
	}
	if err := checkBucketPattern(acct("anything", ""), ""); err != nil {
		t.Errorf("an unknown pattern is not checked: %v", err)
	}
}

func TestPhaseOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		row  ledger.Row
		want ops.Phase
	}{
		{ledger.Row{State: ledger.StateCompleted}, ops.Completed},
		{ledger.Row{State: ledger.StateRunning, ClaimedAt: now}, ops.Claimed},
		{ledger.Row{State: ledger.StateRunning, ClaimedAt: now, StartedAt: now}, ops.Running},
		{ledger.Row{State: ledger.StateQueued}, ops.Queued},
		{ledger.Row{State: ledger.StatePending}, ops.Queued},
		{ledger.Row{State: ledger.StateFailed, NextAttemptAt: now}, ops.Failed},
		{ledger.Row{State: ledger.StateFailed, Stopped: true}, ops.Stopped},
		{ledger.Row{State: ledger.StateFailed, DueKey: "9#2026-11-01#events"}, ops.Stopped},
	} {
		if got := ops.Of(tt.row); got != tt.want {
			t.Errorf("ops.Of(%+v) = %s, want %s", tt.row, got, tt.want)
		}
	}
}

func TestAxis(t *testing.T) {
	t.Parallel()
	days := func(from, to string) []civil.Date { return civil.Range(civil.MustParse(from), civil.MustParse(to)) }
	tests := []struct {
		name          string
		days          []civil.Date
		months, dates string
	}{
		{"within a month", days("2026-11-03", "2026-11-16"),
			"Nov 2026", "3 5    10   15"},
		{"month boundary", days("2026-10-25", "2026-11-08"),
			"Oct    Nov 2026", "25     1   5"},
		{"first month too short for a label", days("2026-10-30", "2026-11-06"),
			"  Nov 2026", "  1   5"},
		{"new year", days("2026-12-28", "2027-01-12"),
			"Dec Jan 2027", "28  1   5    10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, d := axis(tt.days)
			if m != tt.months || d != tt.dates {
				t.Errorf("axis:\n%q\n%q\nwant:\n%q\n%q", m, d, tt.months, tt.dates)
			}
		})
	}
}

func TestHeatmapColoursOnlyOnTerminals(t *testing.T) {
	t.Parallel()
	days := civil.Range(civil.MustParse("2026-11-01"), civil.MustParse("2026-11-05"))
	rows := []heatRow{{label: "events", cells: []ops.Phase{ops.Completed, ops.Completed, ops.Failed, ops.Claimed, ""}, note: "completed 2"}}
	var plain, coloured bytes.Buffer
	drawHeatmap(&plain, days, rows, false)
	drawHeatmap(&coloured, days, rows, true)
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("escape codes without a terminal:\n%q", plain.String())
	}
	if !strings.Contains(plain.String(), "events  ##x~  completed 2") {
		t.Errorf("plain heatmap:\n%s", plain.String())
	}
	if !strings.Contains(coloured.String(), "\x1b[32m##\x1b[0m\x1b[31mx\x1b[0m\x1b[36m~\x1b[0m") {
		t.Errorf("coloured heatmap:\n%q", coloured.String())
	}
	// Long ranges wrap, each block with its axis.
	long := civil.Range(civil.MustParse("2026-01-01"), civil.MustParse("2026-12-31"))
	var wrapped bytes.Buffer
	drawHeatmap(&wrapped, long, []heatRow{{label: "e", cells: make([]ops.Phase, len(long))}}, false)
	if n := strings.Count(wrapped.String(), "Jan 2026"); n != 1 {
		t.Errorf("the year label appears %d times", n)
	}
	if lines := strings.Split(wrapped.String(), "\n"); len(lines) < 4*3 {
		t.Errorf("365 days did not wrap into blocks of %d:\n%s", heatmapWidth, wrapped.String())
	}
}

func TestProgressOnlyOnTerminals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		terminal bool
		total    int
		drawn    bool
	}{
		{"terminal", true, 30, true},
		{"pipe", false, 30, false},
		{"one step", true, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, _, stderr := testApp(t)
			a.terminal = func(io.Writer) bool { return tt.terminal }
			p := a.progress(tt.total, "retry")
			for range tt.total {
				p.Add(1)
			}
			p.Finish()
			if drawn := strings.Contains(stderr.String(), "retry"); drawn != tt.drawn {
				t.Errorf("bar drawn %v, want %v: %q", drawn, tt.drawn, stderr.String())
			}
		})
	}
}

// TestAccountFileFormProblemsAtOnce: every type problem of an account file
// is reported at once, each with its line and column, the field's path, what
// the file has and the form wanted with an example; no Go type names.
func TestAccountFileFormProblemsAtOnce(t *testing.T) {
	t.Parallel()
	file := `{
  "name": "Acme",
  "enabled": "yes",
  "start_date": "2026-11-31",
  "settle_delay": 7200,
  "datasets": ["events", 3],
  "colour": "blue",
  "destination": {"bucket": 42, "region": "eu-west-1", "endpiont": "http://x"}
}`
	err := formProblems("acct.json", []byte(file))
	var fe *fileError
	if !errors.As(err, &fe) {
		t.Fatalf("formProblems: %v", err)
	}
	want := []string{
		`acct.json:3:3: enabled: the string "yes", want true or false`,
		`acct.json:4:3: start_date: the string "2026-11-31" is not a date, YYYY-MM-DD (e.g. "2026-11-01")`,
		`acct.json:5:3: settle_delay: the number 7200, want a duration (e.g. "2h" or "90m")`,
		`acct.json:6:26: datasets[1]: the number 3, want a string`,
		`acct.json:7:3: colour: unknown field; valid fields here: created_at, datasets,`,
		`acct.json:8:19: destination.bucket: the number 42, want a string`,
		`acct.json:8:56: destination.endpiont: unknown field; valid fields here: azure, bucket, checksums,`,
	}
	if len(fe.errs) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(fe.errs), len(want), err)
	}
	for i, w := range want {
		if i < len(fe.errs) && !strings.HasPrefix(fe.errs[i].Error(), w) {
			t.Errorf("problem %d: %q, want it to begin %q", i+1, fe.errs[i], w)
		}
	}
	if strings.Contains(err.Error(), "account.") || strings.Contains(err.Error(), "civil.") || strings.Contains(err.Error(), "*") {
		t.Errorf("a Go type name in %v", err)
	}
	if err := formProblems("acct.json", []byte(`{"name": "a", "enabled": true, "start_date": "2026-11-01", "settle_delay": "2h", "datasets": ["events"], "destination": {"bucket": "b"}}`)); err != nil {
		t.Errorf("a good file: %v", err)
	}
}
