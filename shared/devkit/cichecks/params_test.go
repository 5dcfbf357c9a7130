package cichecks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxParams is the most parameters a function of functions/ takes, a
// leading context.Context and the receiver not counted: past it, the
// values travelling together want to be one value.
const maxParams = 5

// funcParams is one function and how many parameters it takes.
type funcParams struct {
	pos    string // file:line, relative to the repository
	name   string
	params int
}

// countParams counts the parameters of ft: each name of a named field, one
// for an unnamed one, a variadic one counted once; a leading
// context.Context is not counted (the receiver is not in ft).
func countParams(ft *ast.FuncType) int {
	if ft.Params == nil {
		return 0
	}
	n := 0
	for i, f := range ft.Params.List {
		names := max(len(f.Names), 1)
		if i == 0 && isContext(f.Type) {
			names-- // the first name is the context
		}
		n += names
	}
	return n
}

func isContext(t ast.Expr) bool {
	sel, ok := t.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Context" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "context"
}

// paramCounts parses every Go file under dir (tests included) and returns
// every function declaration and function literal with its parameter
// count, largest first.
func paramCounts(dir string) ([]funcParams, error) {
	fset := token.NewFileSet()
	var out []funcParams
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			switch fn := n.(type) {
			case *ast.FuncDecl:
				name := fn.Name.Name
				if fn.Recv != nil && len(fn.Recv.List) == 1 {
					name = recvName(fn.Recv.List[0].Type) + "." + name
				}
				out = append(out, funcParams{fmt.Sprintf("%s:%d", rel, fset.Position(fn.Pos()).Line), name, countParams(fn.Type)})
			case *ast.FuncLit:
				out = append(out, funcParams{fmt.Sprintf("%s:%d", rel, fset.Position(fn.Pos()).Line), "func literal", countParams(fn.Type)})
			}
			return true
		})
		return nil
	})
	slices.SortStableFunc(out, func(a, b funcParams) int { return b.params - a.params })
	return out, err
}

func recvName(t ast.Expr) string {
	switch r := t.(type) {
	case *ast.StarExpr:
		return recvName(r.X)
	case *ast.IndexExpr:
		return recvName(r.X)
	case *ast.IndexListExpr:
		return recvName(r.X)
	case *ast.Ident:
		return r.Name
	}
	return "?"
}

// TestFunctionParameters: no function of the Lambda functions (exporter,
// sweeper, console) takes more than maxParams parameters, a leading
// context.Context and the receiver not counted. Run with -v for the five
// largest.
func TestFunctionParameters(t *testing.T) {
	counts, err := paramCounts(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) < 100 {
		t.Fatalf("found %d functions under functions/: the walk is broken", len(counts))
	}
	for _, c := range counts[:5] {
		t.Logf("%d  %s  %s", c.params, c.name, c.pos)
	}
	for _, c := range counts {
		if c.params > maxParams {
			t.Errorf("%s: %s takes %d parameters (at most %d, a leading context.Context not counted): group the values that travel together",
				c.pos, c.name, c.params, maxParams)
		}
	}
}

// TestCountParams: what the check counts, so that it can fail.
func TestCountParams(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"func f()", 0},
		{"func f(ctx context.Context)", 0},
		{"func f(ctx context.Context, a, b int)", 2},
		{"func f(a int, ctx context.Context)", 2},
		{"func f(ctx, other context.Context)", 1},
		{"func f(int, string, ...any)", 3},
		{"func (s *S) f(ctx context.Context, a, b, c int, d string, e []byte)", 5},
		{"func (s *S) f(ctx context.Context, a, b, c int, d string, e []byte, f bool)", 6},
		{"func f(ctx context.Context, a, b, c, d, e, f int)", 6},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+tc.src+" {}", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := countParams(f.Decls[0].(*ast.FuncDecl).Type); got != tc.want {
			t.Errorf("%s: %d parameters, want %d", tc.src, got, tc.want)
		}
	}
}
