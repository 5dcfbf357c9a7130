package cichecks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/doctable"
)

// wordsHeading is the glossary table's heading in docs/operating.md.
const wordsHeading = "### Deliver, partition, catalog"

// wordRow is one idea of the glossary: its word(s) and the phrases an
// operator must not read for it.
type wordRow struct {
	idea  string
	words []string   // the row's bold words
	say   [][]string // the same, as tokens
	not   []phrase
}

// phrase is one "not" phrase of the glossary: words to match in order,
// where "…" matches up to maxGap words and a word ending in "*" any word
// it begins.
type phrase struct {
	text  string
	parts []string
}

const maxGap = 3

var (
	boldTerm   = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	quotedTerm = regexp.MustCompile(`"([^"]+)"`)
	// wordToken is a word of the text: letters, digits and underscores,
	// joined by an apostrophe or a hyphen (partition's, re-sent, pg_catalog).
	wordToken = regexp.MustCompile(`[\p{L}\p{N}_]+(?:['’-][\p{L}\p{N}_]+)*`)
	// sentenceBreak ends a stretch of text a phrase may match across: a
	// sentence's or clause's end, a table cell's edge, a paragraph. A dot
	// inside a name (catalog.yaml) ends nothing.
	sentenceBreak = regexp.MustCompile(`[;:!?|→—]|\.(?:\s|$)|\n\s*\n`)
	codeSpan      = regexp.MustCompile("`[^`]+`")
	htmlCode      = regexp.MustCompile(`(?s)<code[^>]*>.*?</code>`)
	htmlTag       = regexp.MustCompile(`<[^>]*>`)
)

func tokens(s string) []string {
	w := wordToken.FindAllString(strings.ToLower(s), -1)
	for i := range w {
		w[i] = strings.ReplaceAll(w[i], "’", "'")
	}
	return w
}

// glossary reads the table under wordsHeading.
func glossary(t *testing.T) []wordRow {
	t.Helper()
	rows, err := doctable.Rows(filepath.Join(root, "docs", "operating.md"), wordsHeading)
	if err != nil {
		t.Fatal(err)
	}
	var out []wordRow
	nots := 0
	for i, cells := range rows {
		if len(cells) != 4 {
			t.Fatalf("docs/operating.md %q row %d has %d cells, want 4 (idea, word, not, where an old word stays)", wordsHeading, i+1, len(cells))
		}
		r := wordRow{idea: cells[0]}
		for _, m := range boldTerm.FindAllStringSubmatch(cells[1], -1) {
			r.words = append(r.words, m[1])
			r.say = append(r.say, tokens(m[1]))
		}
		if len(r.say) == 0 {
			t.Fatalf("docs/operating.md %q row %d (%s) names no word in bold", wordsHeading, i+1, r.idea)
		}
		for _, m := range quotedTerm.FindAllStringSubmatch(cells[2], -1) {
			var parts []string
			for _, f := range strings.Fields(strings.ToLower(m[1])) {
				if f == "…" {
					parts = append(parts, f)
					continue
				}
				prefix := strings.HasSuffix(f, "*")
				ts := tokens(strings.TrimSuffix(f, "*"))
				if len(ts) != 1 {
					t.Fatalf("docs/operating.md %q row %d: %q: %q is not one word", wordsHeading, i+1, m[1], f)
				}
				if prefix {
					ts[0] += "*"
				}
				parts = append(parts, ts[0])
			}
			if len(parts) == 0 || parts[0] == "…" || parts[len(parts)-1] == "…" {
				t.Fatalf("docs/operating.md %q row %d: %q must begin and end with a word", wordsHeading, i+1, m[1])
			}
			r.not = append(r.not, phrase{text: m[1], parts: parts})
			nots++
		}
		out = append(out, r)
	}
	// deliver (bucket, delivery manifest, event, table commit, re-sent),
	// partition (ledger row, day folder, table partition, Go type) and
	// catalog (datasets, Glue, Iceberg, PostgreSQL).
	if len(out) < 13 || nots < 20 {
		t.Fatalf("docs/operating.md %q: %d ideas and %d phrases; the table lost rows (the reading is broken?)", wordsHeading, len(out), nots)
	}
	return out
}

// matchAt reports whether p matches ws from index i.
func (p phrase) matchAt(ws []string, i int) bool {
	var match func(pi, wi int) bool
	match = func(pi, wi int) bool {
		if pi == len(p.parts) {
			return true
		}
		if p.parts[pi] == "…" {
			for g := 0; g <= maxGap && wi+g <= len(ws); g++ {
				if match(pi+1, wi+g) {
					return true
				}
			}
			return false
		}
		if wi >= len(ws) {
			return false
		}
		want := p.parts[pi]
		if pre, ok := strings.CutSuffix(want, "*"); ok {
			if !strings.HasPrefix(ws[wi], pre) {
				return false
			}
		} else if ws[wi] != want {
			return false
		}
		return match(pi+1, wi+1)
	}
	return match(0, i)
}

// mask replaces each of the row's own words in ws, and every word of two
// or more of the glossary's, with a word no phrase has: "Glue Data
// Catalog" is not "Glue … catalog", a type "without a catalog type" not
// "without a catalog".
func (r wordRow) mask(ws []string, rows []wordRow) []string {
	out := append([]string(nil), ws...)
	says := append([][]string(nil), r.say...)
	for _, o := range rows {
		for _, say := range o.say {
			if len(say) > 1 {
				says = append(says, say)
			}
		}
	}
	for _, say := range says {
		for i := 0; i+len(say) <= len(out); i++ {
			if strings.Join(out[i:i+len(say)], " ") == strings.Join(say, " ") {
				for j := i; j < i+len(say); j++ {
					out[j] = "§"
				}
			}
		}
	}
	return out
}

// find returns the first of the row's "not" phrases in ws.
func (r wordRow) find(ws []string) (phrase, bool) {
	for _, p := range r.not {
		for i := range ws {
			if p.matchAt(ws, i) {
				return p, true
			}
		}
	}
	return phrase{}, false
}

// misworded is one phrase of the glossary's "not" column found in a text.
type misworded struct {
	at     string // file:line
	phrase string
	row    wordRow
	text   string // the stretch of text it was found in
}

// source is operator-facing text and where it starts.
type source struct {
	file string
	line int
	orig string
	text string // orig with its code blanked, byte for byte
}

// sourceOf blanks the code of text: fenced blocks become a sentence
// break, code spans a word no phrase has (also across a line break).
func sourceOf(file string, line int, text string) source {
	return source{file: file, line: line, orig: text, text: blank(blank(text, mdFence, '.'), codeSpan, 'x')}
}

// check finds the glossary's "not" phrases in the sources.
func check(rows []wordRow, srcs []source) []misworded {
	var out []misworded
	for _, s := range srcs {
		start := 0
		for _, loc := range append(sentenceBreak.FindAllStringIndex(s.text, -1), []int{len(s.text), len(s.text)}) {
			stretch := s.text[start:loc[0]]
			lead := len(stretch) - len(strings.TrimLeft(stretch, " \t\n"))
			line := s.line + strings.Count(s.text[:start+lead], "\n")
			from := start
			start = loc[1]
			ws := tokens(stretch)
			if len(ws) == 0 {
				continue
			}
			for _, r := range rows {
				if len(r.not) == 0 {
					continue
				}
				if p, ok := r.find(r.mask(ws, rows)); ok {
					out = append(out, misworded{at: s.file + ":" + strconv.Itoa(line), phrase: p.text, row: r,
						text: strings.Join(strings.Fields(s.orig[from:loc[0]]), " ")})
				}
			}
		}
	}
	return out
}

// blank replaces every match of re in s with spaces (newlines kept, so
// lines still count), its first byte with mark: a code span stays one word
// that no phrase has, a code block one sentence break.
func blank(s string, re *regexp.Regexp, mark byte) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		b := []byte(m)
		for i := range b {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
		b[0] = mark
		return string(b)
	})
}

// pageSources are README.md and docs/*.md without their code (blocks and
// spans), docs/requirements.md (the specification as written) and the
// glossary's own table left out.
func pageSources(t *testing.T) []source {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []source
	for _, path := range append(pages, filepath.Join(root, "README.md")) {
		rel, _ := filepath.Rel(root, path)
		if rel == filepath.Join("docs", "requirements.md") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if rel == filepath.Join("docs", "operating.md") {
			text = blankTable(t, text, wordsHeading)
		}
		out = append(out, sourceOf(rel, 1, text))
	}
	return out
}

// blankTable blanks the table under heading (its "not" column holds the
// very phrases the check looks for).
func blankTable(t *testing.T, text, heading string) string {
	t.Helper()
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/operating.md has no heading %q", heading)
	}
	lines := strings.SplitAfter(text[i+1:], "\n")
	in := false
	for j, l := range lines {
		if strings.HasPrefix(l, "|") {
			in = true
			lines[j] = "\n"
			continue
		}
		if in {
			break
		}
	}
	return text[:i+1] + strings.Join(lines, "")
}

// operatorDirs hold the Go whose strings an operator reads: the CLI's help
// and messages (daybook verify's report too), the console, what both say
// of the ledger, the functions' logs, errors and metric names.
var operatorDirs = []string{"cmd/daybook", "shared/console", "shared/ops", "shared/verify", "functions"}

// goSources are the string literals of the non-test Go files under
// operatorDirs, the console's templates and template.yaml.
func goSources(t *testing.T) []source {
	t.Helper()
	var out []source
	fset := token.NewFileSet()
	for _, dir := range operatorDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if n := e.Name(); n == "node_modules" || n == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			switch {
			case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
				f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
				if err != nil {
					return err
				}
				ast.Inspect(f, func(n ast.Node) bool {
					lit, ok := n.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return true
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						return true
					}
					out = append(out, sourceOf(rel, fset.Position(lit.Pos()).Line, s))
					return true
				})
			case strings.HasSuffix(path, ".html"):
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				src := sourceOf(rel, 1, string(b))
				src.text = blank(blank(src.text, htmlCode, 'x'), htmlTag, ' ')
				out = append(out, src)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, source{file: "template.yaml", line: 1, orig: string(b), text: string(b)})
}

// TestOperatorTextUsesTheGlossary: what an operator reads (the CLI's help
// and messages, daybook verify's report, the console, the functions' logs,
// errors and metric names, template.yaml, README.md and docs/*.md outside
// code) uses none of the phrases the glossary of docs/operating.md
// ("Deliver, partition, catalog") lists as "not" for an idea: "Glue
// catalog" for the Glue Data Catalog, "redelivery" for a re-sent job,
// "delivers ... to the table" for a table commit, "under the partition"
// for a day folder. A glossary word of two words or more, and the row's
// own, is no such phrase ("Glue Data Catalog" holds "Glue … catalog", a
// "catalog type" "without a catalog").
func TestOperatorTextUsesTheGlossary(t *testing.T) {
	rows := glossary(t)
	srcs := append(pageSources(t), goSources(t)...)
	if len(srcs) < 500 {
		t.Fatalf("read %d texts: the reading is broken", len(srcs))
	}
	phrases := 0
	for _, r := range rows {
		phrases += len(r.not)
	}
	t.Logf("%d texts checked for the %d phrases of %d ideas", len(srcs), phrases, len(rows))
	for _, m := range check(rows, srcs) {
		t.Errorf("%s: %q says %q; docs/operating.md's glossary says %s for %s",
			m.at, m.text, m.phrase, sayOf(m.row), m.row.idea)
	}
}

func sayOf(r wordRow) string {
	var s []string
	for _, w := range r.words {
		s = append(s, strconv.Quote(w))
	}
	return strings.Join(s, " or ")
}

// TestGlossaryCheckFindsPlantedWords: the check flags a planted sentence
// for each kind of slip, where it is, and none of the sentences that use
// the glossary's words, also beside the old ones.
func TestGlossaryCheckFindsPlantedWords(t *testing.T) {
	rows := glossary(t)
	bad := map[string]string{
		"Registering the table in the customer's Glue catalog is optional.":                    "Glue catalog*",
		"Accounts without a role share the Glue\n  tables' catalog of this account.":           "Glue … catalog*",
		"If the exporter dies between the two, SQS delivers the job again.":                    "SQS … deliver*",
		"SQS redelivery is for crashes only.":                                                  "redeliver*",
		"The delivery manifest is not written; the message will be delivered again to fix it.": "message … delivered again",
		"9. **table**: deliver the generation to the account's Iceberg table;":                 "deliver* … to … table",
		"5. **stale cleanup**: delete every object under the partition it did not write.":      "under the partition",
		"The `dt` Hive partitions of the table.":                                               "Hive partition*",
		"`catalog init` reads the columns from the database's own catalog.":                    "database's own catalog",
		"Each table is kept with no catalog: the commit point is the next metadata version.":   "with no catalog",
		"The outbox keeps every delivered event until it is published.":                        "delivered event*",
	}
	var srcs []source
	planted := map[string]string{} // page → sentence
	for s := range bad {
		// A page of five lines, the planted sentence on line 3.
		page := "planted" + strconv.Itoa(len(planted)) + ".md"
		planted[page] = s
		srcs = append(srcs, sourceOf(page, 1, "Intro.\n\n"+s+"\n\nEnd."))
	}
	found := map[string]bool{}
	for _, m := range check(rows, srcs) {
		page, line, _ := strings.Cut(m.at, ":")
		if line != "3" {
			t.Errorf("%s: %q flagged for %q, want line 3", m.at, m.text, m.phrase)
		}
		if bad[planted[page]] == m.phrase {
			found[planted[page]] = true
		}
	}
	for s, want := range bad {
		if !found[s] {
			t.Errorf("%q: not flagged for %q", s, want)
		}
	}
	good := []string{
		"With the table on, glue also registers each dataset's table in the AWS Glue Data Catalog of the bucket's region.",
		"The dataset is delivered again from its first day under v2, and the delivery manifest lists it.",
		"If the exporter dies between the two, SQS sends the job again; the day's files stay delivered.",
		"The run records the plan under the partition's claim, and the partition stops retrying.",
		"9. **table**: the table commit: one snapshot adds the generation's files to the account's Iceberg table.",
		"The day's files are delivered, its Iceberg table did not take them.",
		"Delete every object under the day folder this generation did not write.",
		"`catalog check` reads the indexes from PostgreSQL's system tables, and the catalog's partition column.",
		"No Iceberg catalog: the commit point is the next metadata version.",
		"A column without a catalog type is named; a table with no catalog type mapping too.",
		"The committed event is published once the generation is delivered.",
		"Read `pg_catalog` and `union_all_partitions`; the catalog.yaml names the Glue database.",
	}
	var ok []source
	for i, s := range good {
		ok = append(ok, sourceOf("good.md", i+1, s))
	}
	for _, m := range check(rows, ok) {
		t.Errorf("%s: %q flagged for %q", m.at, m.text, m.phrase)
	}
}
