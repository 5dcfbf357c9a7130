package loadsql

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// sqlComment is one comment of a script: its first line (1-based) and text.
type sqlComment struct {
	line int
	text string
}

// sqlComments returns the comments of script, read the way a statement
// splitter must read it: quoted strings and identifiers ('...', "...",
// `...`, $$...$$) hide comment markers and semicolons. A quote is escaped by
// doubling it, and with backslash also by a backslash (Hive DDL, BigQuery,
// Snowflake and Redshift literals). It fails on an unterminated string,
// identifier or comment.
func sqlComments(script string, backslash bool) ([]sqlComment, error) {
	var out []sqlComment
	line := 1
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch {
		case c == '\n':
			line++
		case strings.HasPrefix(script[i:], "--"):
			end := strings.IndexByte(script[i:], '\n')
			if end < 0 {
				end = len(script) - i
			}
			out = append(out, sqlComment{line, script[i : i+end]})
			i += end - 1
		case strings.HasPrefix(script[i:], "/*"):
			end := strings.Index(script[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated /* comment", line)
			}
			text := script[i : i+2+end+2]
			out = append(out, sqlComment{line, text})
			line += strings.Count(text, "\n")
			i += len(text) - 1
		case strings.HasPrefix(script[i:], "$$"):
			end := strings.Index(script[i+2:], "$$")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated $$ string", line)
			}
			line += strings.Count(script[i:i+2+end+2], "\n")
			i += 2 + end + 1
		case c == '\'' || c == '"' || c == '`':
			start := line
			j := i + 1
			for ; j < len(script); j++ {
				switch {
				case script[j] == '\n':
					line++
				case backslash && script[j] == '\\':
					j++
				case script[j] == c && j+1 < len(script) && script[j+1] == c:
					j++
				case script[j] == c:
					goto closed
				}
			}
			return nil, fmt.Errorf("line %d: unterminated %c", start, c)
		closed:
			i = j
		}
	}
	return out, nil
}

func TestSQLComments(t *testing.T) {
	tests := []struct {
		name, script string
		backslash    bool
		want         []string // the comments, in order
		err          string
	}{
		{"line comment", "SELECT 1; -- done; really\nSELECT 2;\n", false, []string{"-- done; really"}, ""},
		{"block comment", "/* a; b */ SELECT 1;", false, []string{"/* a; b */"}, ""},
		{"markers in a string", "SELECT ';--x', '/*' FROM t; -- c\n", false, []string{"-- c"}, ""},
		{"doubled quote", "SELECT 'it''s -- no';\n", false, nil, ""},
		{"backslash quote", `SELECT 'a\'-- b';`, true, nil, ""},
		{"backslash is literal without escapes", `SELECT 'a\' -- b';`, false, []string{"-- b';"}, ""},
		{"dollar quoted body", "CREATE PROCEDURE p() AS $$\nBEGIN -- x; y\nEND;\n$$ LANGUAGE plpgsql;", false, nil, ""},
		{"snowflake positional and session variables", "SELECT $1:\"a\" FROM t; EXECUTE IMMEDIATE $v; -- ok\n", true, []string{"-- ok"}, ""},
		{"backtick identifier", "SELECT `we``ird -- x` FROM t;", false, nil, ""},
		{"double-quoted identifier", `SELECT "a"";--" FROM t;`, false, nil, ""},
		{"unterminated string", "SELECT 'abc;\n", false, nil, "unterminated '"},
		{"unterminated comment", "/* abc", false, nil, "unterminated /*"},
		{"unterminated dollar string", "AS $$ BEGIN", false, nil, "unterminated $$"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sqlComments(tt.script, tt.backslash)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, c := range got {
				texts = append(texts, c.text)
			}
			if strings.Join(texts, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("comments = %q, want %q", texts, tt.want)
			}
		})
	}
}

// allScripts generates every script the tests know of: every shipped
// dataset, the synthetic one and the evolved one, in both formats, for every
// engine, plus the current-state queries. Keys name the script.
func allScripts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ds := range append(goldenDatasets(t), evolvedDataset()) {
		for _, format := range []fileformat.Format{fileformat.Parquet, fileformat.NDJSON} {
			for _, engine := range Engines {
				p, ok := forEngine(engine, goldenPartition(t, ds, format))
				if !ok {
					continue
				}
				s, err := Generate(engine, p)
				if err != nil {
					t.Fatal(err)
				}
				out[fmt.Sprintf("%s v%d %s %s", ds.Name, ds.Version, format, engine)] = s
				if ds.Partition == dataset.PartitionActivity {
					q, err := CurrentState(engine, p)
					if err != nil {
						t.Fatal(err)
					}
					out[fmt.Sprintf("%s current state %s", ds.Name, engine)] = q
				}
			}
		}
	}
	return out
}

// Naive statement splitters cut a script at every semicolon outside quotes,
// comments included: no comment of a generated script may hold one.
func TestNoSemicolonInComments(t *testing.T) {
	for name, s := range allScripts(t) {
		engine := name[strings.LastIndexByte(name, ' ')+1:]
		comments, err := sqlComments(s, engine != EngineDuckDB)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(comments) == 0 && !strings.Contains(name, "current state") {
			t.Errorf("%s: no comment found: the header is missing or the scanner is broken", name)
		}
		for _, c := range comments {
			if strings.Contains(c.text, ";") {
				t.Errorf("%s: line %d: semicolon in a comment: %s", name, c.line, c.text)
			}
		}
	}
}

// requirementID matches the project's requirement ids (E3, Q1, ...) and the
// word SPEC. S1..S4 are left out: "S3" is also Amazon S3.
var requirementID = regexp.MustCompile(`\bSPEC\b|\b[CDEFLOQRX][1-9]\b`)

// Customers read the scripts: internal requirement ids have no place there.
func TestNoRequirementIDs(t *testing.T) {
	if !requirementID.MatchString("writes _SUCCESS (E3)") || requirementID.MatchString("s3://bucket, Amazon S3, $1") {
		t.Fatal("requirementID does not tell ids from S3")
	}
	for name, s := range allScripts(t) {
		for i, l := range strings.Split(s, "\n") {
			if m := requirementID.FindString(l); m != "" {
				t.Errorf("%s: line %d: requirement id %q in %q", name, i+1, m, l)
			}
		}
	}
}
