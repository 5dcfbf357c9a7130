// Package leakcheck is test support: it scans what daybook writes into a
// customer's bucket for details internal to the sender that a customer must
// never read there: the source queries and the source-only tables and
// columns they read (from the dataset catalog; a dataset's declared
// relation is public, as provenance names it), requirement ids, AWS account
// ids, and any strings a test adds (a source's name, host, user, database).
package leakcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/daybook-dev/daybook/shared/dataset"
)

var (
	// The word code comments put before a requirement id they cite.
	specRE = regexp.MustCompile(`SPEC`)
	// A bare requirement id in prose. S3 is left out: it is the storage
	// service's name everywhere in a customer's documents.
	idRE = regexp.MustCompile(`\b([LEFDQCOXR][0-9]|S[124-9])\b`)
	// A 12-digit number stands for an AWS account id.
	accountRE = regexp.MustCompile(`\b[0-9]{12}\b`)
	// A source-table column definition in the catalog's DDL.
	ddlColumnRE = regexp.MustCompile(`(?m)^\s{4}([a-z_]+)\s+[A-Z]`)
	ddlTableRE  = regexp.MustCompile(`CREATE TABLE IF NOT EXISTS ([a-z_]+)`)
	relationRE  = regexp.MustCompile(`FROM ([a-z_]+) WHERE`)
)

// internals are the strings derived from the shipped example catalog, the
// tests' and the demo's, that no bucket object may contain.
var internals = sync.OnceValues(func() ([]string, error) {
	ex, err := dataset.Example()
	if err != nil {
		return nil, err
	}
	cat := ex.Datasets()
	public := map[string]bool{"account_id": true} // the manifests name the customer's own account
	for _, ds := range cat {
		// A dataset's declared relation is published: a partition's
		// provenance names the table or view it was read from.
		public[ds.Name], public[ds.Relation] = true, true
		for _, c := range ds.Columns {
			public[c.Name] = true
		}
	}
	var out []string
	add := func(s string) {
		if !public[s] && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, ds := range cat {
		for _, dialect := range dataset.Dialects {
			q, err := ds.Query(dialect)
			if err != nil {
				return nil, err
			}
			add(q)
			for _, m := range relationRE.FindAllStringSubmatch(q, -1) {
				add(m[1])
			}
			if fp, err := ds.FingerprintQuery(dialect); err == nil {
				add(fp)
			}
		}
	}
	add("WHERE account_id")
	for _, dialect := range dataset.Dialects {
		ddl, err := dataset.SourceDDL(dialect)
		if err != nil {
			return nil, err
		}
		for _, re := range []*regexp.Regexp{ddlTableRE, ddlColumnRE} {
			for _, m := range re.FindAllStringSubmatch(ddl, -1) {
				add(m[1])
			}
		}
	}
	return out, nil
})

// Internals returns the catalog-derived strings Scan refuses everywhere.
func Internals() ([]string, error) { return internals() }

// Scan returns one line per problem found in the object at key: a
// catalog-derived internal string, a requirement id, an AWS account id, or
// one of extra, found as a whole word: not inside a longer run of letters
// and digits, so a port such as 5432 is not found inside a checksum or a
// run id's random hex. Source SQL is refused everywhere; "SELECT " is allowed only
// in load scripts (under `_load/`), which are SQL by design, and in the
// README's fenced sql examples (the customer's own queries); bare
// requirement ids are looked for in prose documents (README, `_schemas/`),
// where no checksum or id can look like one by chance.
func Scan(key string, body []byte, extra ...string) []string {
	text := string(body)
	var out []string
	bad := func(format string, args ...any) { out = append(out, key+": "+fmt.Sprintf(format, args...)) }
	ins, err := internals()
	if err != nil {
		return []string{key + ": " + err.Error()}
	}
	for _, s := range ins {
		if s != "" && strings.Contains(text, s) {
			bad("contains %q", s)
		}
	}
	for _, s := range extra {
		if containsWord(text, s) {
			bad("contains %q", s)
		}
	}
	if specRE.MatchString(text) {
		bad("cites a requirement (%q)", "SPEC")
	}
	if m := accountRE.FindString(text); m != "" {
		bad("contains %s, which looks like an AWS account id", m)
	}
	if !strings.Contains(key, "/_load/") && strings.Contains(withoutSQLExamples(key, text), "SELECT ") {
		bad("contains SQL (%q) outside a load script", "SELECT ")
	}
	if strings.HasSuffix(key, "/README.md") || strings.Contains(key, "/_schemas/") {
		if m := idRE.FindString(text); m != "" {
			bad("contains %q, which looks like a requirement id", m)
		}
	}
	return out
}

// withoutSQLExamples is text less the ```sql blocks of a README (the
// queries it shows the customer); other documents are returned whole.
func withoutSQLExamples(key, text string) string {
	if !strings.HasSuffix(key, "/README.md") {
		return text
	}
	var b strings.Builder
	in := false
	for line := range strings.Lines(text) {
		switch t := strings.TrimSpace(line); {
		case !in && t == "```sql":
			in = true
		case in && t == "```":
			in = false
		case !in:
			b.WriteString(line)
		}
	}
	return b.String()
}

// containsWord reports whether s occurs in text with no letter or digit
// right before or after it.
func containsWord(text, s string) bool {
	if s == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(s)
		if !isAlnum(text, start-1) && !isAlnum(text, end) {
			return true
		}
		i = start + 1
	}
}

// isAlnum reports whether text holds an ASCII letter or digit at i.
func isAlnum(text string, i int) bool {
	if i < 0 || i >= len(text) {
		return false
	}
	c := text[i]
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
