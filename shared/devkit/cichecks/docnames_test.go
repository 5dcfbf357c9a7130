package cichecks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// declared is what the module's Go code (tests left out) declares: per
// package name, its package-level names and its types' methods; per type
// name, its methods and struct fields (embedded types by their type name),
// or an interface's methods; and the names of the packages of other modules
// it imports. Names of the same package or type name in several
// directories are merged.
type declared struct {
	pkgs     map[string]map[string]bool
	types    map[string]map[string]bool
	external map[string]bool
}

func declaredNames(t *testing.T) declared {
	t.Helper()
	d := declared{pkgs: map[string]map[string]bool{}, types: map[string]map[string]bool{}, external: map[string]bool{}}
	add := func(m map[string]map[string]bool, k, name string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][name] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); n == "node_modules" || n == "testdata" || (strings.HasPrefix(n, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		for _, imp := range f.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); !strings.HasPrefix(p, module+"/") {
				name := p[strings.LastIndexByte(p, '/')+1:]
				if majorVersion.MatchString(name) && strings.Contains(p, "/") {
					q := p[:strings.LastIndexByte(p, '/')]
					name = q[strings.LastIndexByte(q, '/')+1:]
				}
				if imp.Name != nil {
					name = imp.Name.Name
				}
				d.external[name] = true
			}
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					add(d.pkgs, pkg, decl.Name.Name)
					continue
				}
				if recv := receiverType(decl.Recv.List[0].Type); recv != "" {
					add(d.types, recv, decl.Name.Name)
					add(d.pkgs, pkg, decl.Name.Name) // `ledger.Complete` for a method of one of its types
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						add(d.pkgs, pkg, spec.Name.Name)
						addMembers(spec, func(name string) { add(d.types, spec.Name.Name, name) })
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							add(d.pkgs, pkg, n.Name)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// receiverType is the name of a method's receiver type (T, *T, T[P]).
func receiverType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// addMembers adds a struct type's fields, or an interface type's methods.
func addMembers(spec *ast.TypeSpec, add func(string)) {
	var fields *ast.FieldList
	switch tt := spec.Type.(type) {
	case *ast.StructType:
		fields = tt.Fields
	case *ast.InterfaceType:
		fields = tt.Methods
	default:
		return
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			x := f.Type
			if sel, ok := x.(*ast.SelectorExpr); ok {
				x = sel.Sel
			}
			if n := receiverType(x); n != "" {
				add(n)
			}
		}
		for _, n := range f.Names {
			add(n.Name)
		}
	}
}

// majorVersion is an import path's last element that is its major
// version (github.com/jackc/pgx/v5 is package pgx).
var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// module is the module's path (go.mod).
const module = "github.com/daybook-dev/daybook"

// fileExtensions are the second parts of a code span that names a file
// (`generation.go`, `catalog.yaml`), not a Go name.
var fileExtensions = map[string]bool{"go": true, "yaml": true, "yml": true, "json": true, "md": true,
	"text": true, "txt": true, "sql": true, "csv": true, "avro": true, "html": true, "tmpl": true, "sh": true, "mod": true}

// otherModules are code spans of the docs that name another module's Go
// whose first part is also a name of this module.
var otherModules = map[string]bool{
	"`Value.Level`": true, // parquet-go's, in performance.md's history of the encoder
}

// docQualified matches a code span that is one qualified Go name:
// `pkg.Name`, `Type.Method` or `Type.field`, optionally called (`f()`).
var docQualified = regexp.MustCompile("`\\*?([A-Za-z_][A-Za-z0-9_]*)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\(\\))?`")

// TestDocNamesExist: every qualified Go name docs/*.md (the
// architecture's one current picture above all) and README.md write in a
// code span, `pkg.Name` with an
// exported Name of a package of the module (a package-level name or a
// method of one of its types) or `Type.Member` of one of its types, is
// declared there, so a function renamed or removed is not still described
// as the current picture. A span whose first part is neither a package nor
// a type of the module (`events.v2`), that names a file (`run.go`), or
// whose first part is a package of another module the code imports
// (`table.ErrCommitFailed`, iceberg-go's) is not checked.
func TestDocNamesExist(t *testing.T) {
	d := declaredNames(t)
	var missing []string
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(docs, filepath.Join(root, "README.md")) {
		doc, _ := filepath.Rel(root, path)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range docQualified.FindAllStringSubmatch(line, -1) {
				first, second := m[1], m[2]
				if fileExtensions[second] || otherModules[m[0]] || (d.external[first] && d.pkgs[first] == nil) {
					continue
				}
				pkgNames, isPkg := d.pkgs[first]
				members, isType := d.types[first]
				exported := second[0] >= 'A' && second[0] <= 'Z'
				switch {
				case isType && members[second], isPkg && pkgNames[second]:
				case isType, isPkg && exported:
					missing = append(missing, doc+":"+strconv.Itoa(i+1)+": "+m[0])
				}
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s is declared nowhere in the module's Go code (renamed or removed? say what is there now)", m)
	}
}
