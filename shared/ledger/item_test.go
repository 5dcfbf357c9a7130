package ledger

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// recordTypes are the stored forms of the table's items; their dynamodbav
// tags are the attribute names.
var recordTypes = []reflect.Type{
	reflect.TypeFor[rowRecord](),
	reflect.TypeFor[accountRecord](),
	reflect.TypeFor[watermarkRecord](),
	reflect.TypeFor[statsRecord](),
	reflect.TypeFor[attemptRecord](),
	reflect.TypeFor[seedRecord](),
	reflect.TypeFor[budgetRecord](),
	reflect.TypeFor[guardRecord](),
	reflect.TypeFor[summaryRecord](),
	reflect.TypeFor[eventRecord](),
	reflect.TypeFor[sliceRecord](),
	reflect.TypeFor[tokenRecord](),
	reflect.TypeFor[schemaRecord](),
	reflect.TypeFor[outboxRecord](),
}

// recordTags maps every dynamodbav tag of the record types to the types that
// carry it.
func recordTags(t *testing.T) map[string][]string {
	t.Helper()
	tags := map[string][]string{}
	for _, rt := range recordTypes {
		for i := range rt.NumField() {
			f := rt.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
			if tag == "" || tag == "-" {
				t.Errorf("%s.%s has no dynamodbav name", rt.Name(), f.Name)
				continue
			}
			tags[tag] = append(tags[tag], rt.Name())
		}
	}
	return tags
}

// parsePackage parses the package's Go files, tests excepted.
func parsePackage(t *testing.T) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = f
	}
	return files
}

// isAttrConst reports whether a constant's name marks it as an attribute name.
func isAttrConst(name string) bool {
	return strings.HasPrefix(name, "attr") || strings.HasPrefix(name, "Attr")
}

// attrConsts returns the value of every attr*/Attr* constant declared in
// the package's non-test files, read from the source so that a new constant
// is checked without being listed here.
func attrConsts(t *testing.T) map[string]string {
	t.Helper()
	consts := map[string]string{}
	for file, f := range parsePackage(t) {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !isAttrConst(id.Name) {
						continue
					}
					var lit *ast.BasicLit
					if i < len(vs.Values) {
						lit, _ = vs.Values[i].(*ast.BasicLit)
					}
					if lit == nil || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal", file, id.Name)
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					consts[id.Name] = v
				}
			}
		}
	}
	return consts
}

// TestAttributeNamesMatchRecords: the attribute-name constants and the
// struct tags of the stored records are one set of names. Every constant
// names a tag, every tag has exactly one constant, so expressions built from
// the constants and items decoded through the tags cannot drift apart.
func TestAttributeNamesMatchRecords(t *testing.T) {
	tags := recordTags(t)
	consts := attrConsts(t)
	if len(consts) < len(tags) {
		t.Errorf("%d attribute constants for %d tags", len(consts), len(tags))
	}
	byValue := map[string][]string{}
	for c, v := range consts {
		byValue[v] = append(byValue[v], c)
		if _, ok := tags[v]; !ok {
			t.Errorf("constant %s = %q is no dynamodbav tag of %v", c, v, recordTypes)
		}
	}
	for v, cs := range byValue {
		if len(cs) > 1 {
			slices.Sort(cs)
			t.Errorf("attribute %q has %d constants: %v", v, len(cs), cs)
		}
	}
	for tag, types := range tags {
		if len(byValue[tag]) == 0 {
			t.Errorf("tag %q of %v has no attribute constant", tag, types)
		}
	}
}

// TestNoAttributeNameLiterals: the package's code names attributes through
// the constants only; a string literal spelling an attribute name elsewhere
// (in an expression, a key map, a condition) is the drift the constants
// prevent. Struct tags are not string literals of that value, so they pass.
// Tests are not checked: a case may well be called "lease_until".
func TestNoAttributeNameLiterals(t *testing.T) {
	tags := recordTags(t)
	for file, f := range parsePackage(t) {
		decl := map[*ast.BasicLit]bool{} // the constants' own values
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if lit, ok := valueAt(vs, i).(*ast.BasicLit); ok && isAttrConst(id.Name) {
						decl[lit] = true
					}
				}
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || decl[lit] {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil {
				if _, ok := tags[v]; ok {
					t.Errorf("%s: literal %s: use the attribute constant", file, lit.Value)
				}
			}
			return true
		})
	}
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}
