package ledger

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// attributes is every attribute a kind's items may carry, key attributes
// included.
func (k itemKind) attributes() []string {
	out := []string{AttrPK, AttrSK}
	if k.record != nil {
		t := reflect.TypeOf(k.record)
		for i := range t.NumField() {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("dynamodbav"), ",")
			if tag != AttrPK && tag != AttrSK {
				out = append(out, tag)
			}
		}
	}
	return append(out, k.attrs...)
}

// kindKey is how both item tables identify a kind: its name and key shapes.
type kindKey struct{ name, pk, sk string }

func (k kindKey) String() string { return k.name + " (pk=" + k.pk + " sk=" + k.sk + ")" }

func registryKeys() []kindKey {
	var out []kindKey
	for _, k := range kinds {
		out = append(out, kindKey{k.name, k.pk, k.sk})
	}
	return out
}

var (
	docKindLine  = regexp.MustCompile(`^\t([a-z ]+):\s+pk=(\S+)\s+sk=(.+)$`)
	archKindLine = regexp.MustCompile("^\\| ([a-z ]+) \\| `([^`]+)` \\| `([^`]+)` \\|")
)

// docKinds reads the item table of the package doc (doc.go).
func docKinds(t *testing.T) []kindKey {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package doc")
	}
	var out []kindKey
	for line := range strings.SplitSeq(f.Doc.Text(), "\n") {
		if m := docKindLine.FindStringSubmatch(line); m != nil {
			out = append(out, kindKey{m[1], m[2], strings.TrimSpace(m[3])})
		}
	}
	return out
}

// archKinds reads the item table of docs/architecture.md's "The ledger
// table" (its first table, up to the first blank line).
func archKinds(t *testing.T) []kindKey {
	t.Helper()
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## The ledger table\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## The ledger table" section`)
	}
	_, sec, ok = strings.Cut(sec, "| item | pk | sk | notes |\n")
	if !ok {
		t.Fatal(`docs/architecture.md's "The ledger table" has no item table (| item | pk | sk | notes |)`)
	}
	sec, _, _ = strings.Cut(sec, "\n\n")
	var out []kindKey
	for line := range strings.SplitSeq(sec, "\n") {
		if m := archKindLine.FindStringSubmatch(line); m != nil {
			out = append(out, kindKey{m[1], m[2], strings.ReplaceAll(m[3], `\|`, "|")})
		}
	}
	return out
}

// compareKinds reports every kind of the registry missing from a table,
// and every kind of the table not in the registry.
func compareKinds(t *testing.T, where string, got []kindKey) {
	t.Helper()
	want := registryKeys()
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("%s: item kind %s of the registry (registry.go) is missing", where, k)
		}
	}
	for _, k := range got {
		if !slices.Contains(want, k) {
			t.Errorf("%s: item kind %s is not in the registry (registry.go)", where, k)
		}
	}
}

// TestItemKindsDocumented: the package doc's item table and the
// architecture page's both list exactly the registry's kinds, by name and
// key shapes.
func TestItemKindsDocumented(t *testing.T) {
	doc, arch := docKinds(t), archKinds(t)
	if len(doc) == 0 || len(arch) == 0 {
		t.Fatalf("item tables not found: %d kinds in the package doc, %d in docs/architecture.md", len(doc), len(arch))
	}
	compareKinds(t, "package doc (doc.go)", doc)
	compareKinds(t, "docs/architecture.md", arch)
}

// TestItemKindsRegistry: the registry is whole and consistent. Every key
// prefix constant (pk*, sk*) of the package starts some kind's keys; each
// kind's key shapes start with its prefix; its attributes are attribute
// constants, each once.
func TestItemKindsRegistry(t *testing.T) {
	consts := attrConsts(t)
	known := map[string]bool{}
	for _, v := range consts {
		known[v] = true
	}
	names := map[string]bool{}
	var prefixes []string
	for _, k := range kinds {
		if names[k.name] {
			t.Errorf("kind %q listed twice", k.name)
		}
		names[k.name] = true
		pk, sk, _ := strings.Cut(k.prefix, "/")
		prefixes = append(prefixes, pk, sk)
		if !strings.HasPrefix(k.pk, pk) || !strings.HasPrefix(k.sk, sk) {
			t.Errorf("kind %q: key shapes pk=%s sk=%s do not start with its prefix %q", k.name, k.pk, k.sk, k.prefix)
		}
		if k.writers == "" {
			t.Errorf("kind %q: no writer named", k.name)
		}
		seen := map[string]bool{}
		for _, a := range k.attributes() {
			if !known[a] {
				t.Errorf("kind %q: attribute %q is no attribute constant", k.name, a)
			}
			if seen[a] {
				t.Errorf("kind %q: attribute %q listed twice", k.name, a)
			}
			seen[a] = true
		}
	}
	for file, f := range parsePackage(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "pk") && !strings.HasPrefix(id.Name, "sk") {
					continue
				}
				lit, ok := valueAt(vs, i).(*ast.BasicLit)
				if !ok {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(prefixes, v) {
					t.Errorf("%s: key constant %s = %q starts no kind of the registry (registry.go)", file, id.Name, v)
				}
			}
			return true
		})
	}
}

// indexes are the sparse indexes a kind can carry entries in: the
// registry's field, and the attribute prefix an item table's notes name
// when the kind carries one.
var indexes = []struct {
	name, attr string
	entry      func(itemKind) string
}{
	{"due", "due_", func(k itemKind) string { return k.due }},
	{"fleet", "fleet_", func(k itemKind) string { return k.fleet }},
	{"restate", "restate_", func(k itemKind) string { return k.restate }},
}

// archNotes reads the notes of docs/architecture.md's item table, by kind.
func archNotes(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(b), "| item | pk | sk | notes |\n")
	sec, _, _ = strings.Cut(sec, "\n\n")
	out := map[string]string{}
	for line := range strings.SplitSeq(sec, "\n") {
		if m := archKindLine.FindStringSubmatch(line); m != nil {
			out[m[1]] = line[len(m[0]):]
		}
	}
	return out
}

// entryPrefix finds the hash key prefixes in a registry's index entry
// ("X#<nn> (while stopped), Z#<nn> (...)": X#, Z#).
var entryPrefix = regexp.MustCompile(`\b([A-Z]+#)<`)

// TestIndexEntriesDocumented: the architecture page's notes of a kind name
// each sparse index the registry says it carries entries in (by the
// index's attributes, due_*, fleet_*, restate_*, or as "the `fleet`
// index"), and no other; and the
// package doc's section on the due or fleet index names the hash key
// prefix of every kind's entries in it (W#<nn>, OB#<n>, ...).
func TestIndexEntriesDocumented(t *testing.T) {
	notes := archNotes(t)
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	section := func(index string) string {
		_, s, ok := strings.Cut(string(doc), "// # The sparse \""+index+"\" index\n")
		if !ok {
			return ""
		}
		s, _, _ = strings.Cut(s, "\n// # ")
		return s
	}
	for _, k := range kinds {
		n, ok := notes[k.name]
		if !ok {
			t.Errorf("docs/architecture.md: no notes of %s", k.name)
			continue
		}
		for _, ix := range indexes {
			entry := ix.entry(k)
			if named := strings.Contains(n, ix.attr) || strings.Contains(n, "`"+ix.name+"` index"); named != (entry != "") {
				t.Errorf("docs/architecture.md: the notes of %s name the %s index (%s* or `%s` index): %v; the registry says it carries entries there: %q", k.name, ix.name, ix.attr, ix.name, named, entry)
			}
			if ix.name == "restate" {
				continue // the restate index (restate.go's doc)
			}
			// Every hash key prefix of the kind's entries (a partition row
			// has two in the fleet index); an entry under an account id
			// has none.
			for _, m := range entryPrefix.FindAllStringSubmatch(entry, -1) {
				if s := section(ix.name); !strings.Contains(s, m[1]+"<") {
					t.Errorf("package doc (doc.go): the %q index's section does not name %s's entries (%s<...>)", ix.name, k.name, m[1])
				}
			}
		}
	}
}
