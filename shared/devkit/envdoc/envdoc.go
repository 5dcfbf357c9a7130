// Package envdoc generates docs/configuration.md, the page of every
// environment variable daybook reads, from the two places that decide it:
// template.yaml's Environment blocks (which function gets which variable,
// from which stack parameter) and the product code (functions/, cmd/daybook
// and shared/ but shared/devkit, test files left out), where a variable is
// a string literal in the shape of one (FOO_BAR) or the name passed to a
// getenv or lookup call (GOMEMLIMIT, TERM). What each variable means is
// written once, in meanings.go; a variable the code or the template has and
// the meanings lack, or the other way round, is an error, so the page
// cannot drift from the code.
//
//	go test ./shared/devkit/envdoc -run TestConfigurationPage -update
//
// rewrites the page; the same test without -update fails when the
// committed page is not what the code generates.
package envdoc

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Var is one environment variable: where the template sets it and where
// the code reads it.
type Var struct {
	Name      string
	Functions []string // template functions that get it (SweeperFunction, ...); Globals: all
	Parameter string   // the stack parameter its template value names, if any
	ReadIn    []string // directories of the product code that name it
}

var (
	envShape  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+_?$`)
	readCalls = []string{"Getenv", "LookupEnv", "getenv", "lookup"}
	tmplVar   = regexp.MustCompile(`^(\s+)([A-Z][A-Z0-9_]*): (.*)$`)
	tmplParam = regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}|!Ref ([A-Za-z0-9]+)`)
)

// codeRoots are the product code's directories, relative to the repository.
var codeRoots = []string{"functions", "cmd/daybook", "shared"}

// Scan reads the template and the code under root.
func Scan(root string) (map[string]*Var, error) {
	vars := map[string]*Var{}
	get := func(name string) *Var {
		if vars[name] == nil {
			vars[name] = &Var{Name: name}
		}
		return vars[name]
	}
	if err := scanTemplate(filepath.Join(root, "template.yaml"), get); err != nil {
		return nil, err
	}
	for _, dir := range codeRoots {
		if err := scanCode(root, dir, get); err != nil {
			return nil, err
		}
	}
	for _, v := range vars {
		slices.Sort(v.ReadIn)
		v.ReadIn = slices.Compact(v.ReadIn)
	}
	return vars, nil
}

// scanTemplate reads the Environment Variables blocks of template.yaml's
// Globals (every function) and of each function resource.
func scanTemplate(path string, get func(string) *Var) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	params := map[string]bool{}
	var section, resource string
	varsIndent := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		switch {
		case indent == 0:
			section, _, _ = strings.Cut(trimmed, ":")
			resource, varsIndent = "", -1
			continue
		case indent == 2:
			resource, _, _ = strings.Cut(trimmed, ":")
			varsIndent = -1
			if section == "Parameters" {
				params[resource] = true
			}
			continue
		case trimmed == "Variables:":
			varsIndent = indent
			continue
		}
		if varsIndent < 0 {
			continue
		}
		m := tmplVar.FindStringSubmatch(line)
		if m == nil || len(m[1]) <= varsIndent {
			varsIndent = -1
			continue
		}
		var fn string
		switch {
		case section == "Globals" && resource == "Function":
			fn = "every function"
		case section == "Resources" && strings.HasSuffix(resource, "Function"):
			fn = resource
		default:
			return fmt.Errorf("%s: environment variable %s outside Globals or a function (%s %s)", path, m[2], section, resource)
		}
		v := get(m[2])
		v.Functions = append(v.Functions, fn)
		for _, p := range tmplParam.FindAllStringSubmatch(m[3], -1) {
			if name := p[1] + p[2]; params[name] {
				v.Parameter = name
			}
		}
	}
	return sc.Err()
}

// scanCode records every variable the Go files under dir name.
func scanCode(root, dir string, get func(string) *Var) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "shared/devkit" || d.Name() == "testdata" || d.Name() == "node_modules" {
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
		where := filepath.ToSlash(filepath.Dir(rel))
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BasicLit:
				if s, ok := literal(x); ok && envShape.MatchString(s) {
					get(s).ReadIn = append(get(s).ReadIn, where)
				}
			case *ast.CallExpr:
				if slices.Contains(readCalls, callName(x.Fun)) && len(x.Args) > 0 {
					if lit, ok := x.Args[0].(*ast.BasicLit); ok {
						if s, ok := literal(lit); ok {
							get(s).ReadIn = append(get(s).ReadIn, where)
						}
					}
				}
			}
			return true
		})
		return nil
	})
}

func literal(l *ast.BasicLit) (string, bool) {
	if l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

func callName(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// Check compares what Scan found with the meanings: every variable found
// has one, and every meaning names a variable found.
func Check(vars map[string]*Var) error {
	var errs []string
	for name, v := range vars {
		if _, ok := notVariables[name]; ok {
			continue
		}
		if _, ok := meanings[name]; !ok {
			errs = append(errs, fmt.Sprintf("%s (set for %v, named in %v) has no meaning in shared/devkit/envdoc/meanings.go", name, v.Functions, v.ReadIn))
		}
	}
	for name := range meanings {
		if vars[name] == nil {
			errs = append(errs, fmt.Sprintf("%s is in shared/devkit/envdoc/meanings.go, but neither the template nor the code has it", name))
		}
	}
	for name := range notVariables {
		if vars[name] == nil {
			errs = append(errs, fmt.Sprintf("%s is in notVariables, but the code no longer names it", name))
		}
	}
	slices.Sort(errs)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// Render writes the page.
func Render(vars map[string]*Var) []byte {
	var set, unset []*Var
	for name, v := range vars {
		if _, ok := notVariables[name]; ok {
			continue
		}
		if len(v.Functions) > 0 {
			set = append(set, v)
		} else {
			unset = append(unset, v)
		}
	}
	rank := func(v *Var) string {
		if v.Functions[0] == "every function" {
			return "0"
		}
		return "1" + strings.Join(v.Functions, ",")
	}
	order := func(a, b *Var) int {
		if c := strings.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	}
	slices.SortFunc(set, order)
	slices.SortFunc(unset, func(a, b *Var) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\n## Set by template.yaml\n\n")
	b.WriteString("Stack parameters in brackets. Every function of the template gets the first group (its `Globals`).\n\n")
	b.WriteString("| variable | set for | read in | meaning |\n|---|---|---|---|\n")
	for _, v := range set {
		fns := strings.Join(v.Functions, ", ")
		m := meanings[v.Name]
		if v.Parameter != "" {
			m += " [`" + v.Parameter + "`]"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Name, fns, readIn(v.ReadIn), m)
	}
	b.WriteString("\n## Not set by the template\n\n")
	b.WriteString("Read from the environment the program runs in: the Lambda runtime's, a developer's, the CLI's env file (`--env-file`, `.local/env.json`) or a benchmark's.\n\n")
	b.WriteString("| variable | read in | meaning |\n|---|---|---|\n")
	for _, v := range unset {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, readIn(v.ReadIn), meanings[v.Name])
	}
	b.WriteString(footer)
	return []byte(b.String())
}

func readIn(dirs []string) string {
	if len(dirs) == 0 {
		return "(no code: for the runtime or the template only)"
	}
	var out []string
	for _, d := range dirs {
		out = append(out, "`"+d+"`")
	}
	return strings.Join(out, ", ")
}

const header = `# Configuration: the environment variables

Generated from template.yaml's Environment blocks and from the product code (the variables it
names); the meanings are in ` + "`shared/devkit/envdoc/meanings.go`" + `. Do not edit this page: change
the code or the meanings and run

` + "```sh" + `
go test ./shared/devkit/envdoc -run TestConfigurationPage -update
` + "```" + `

The same test fails when this page is not what they generate, when the code reads a variable
without a meaning, and when a meaning names a variable nothing reads.

A missing or malformed variable stops a function at start-up with an error naming it. The CLI
(` + "`daybook`" + `) reads the same names from the deployed stack's outputs (` + "`--stack`" + `), an env file, or
the environment ([operating.md](operating.md#where-it-points)).
`

const footer = `
A dataset that names a source (` + "`source: billing`" + `) or an account on a shard reads the DSN of that
source or shard: ` + "`SOURCE_DSN_<SOURCE>[__<SHARD>]`" + ` or ` + "`SOURCE_DSN_PARAMETER_<SOURCE>[__<SHARD>]`" + `
(` + "`DEFAULT`" + ` for the default source's shards), or an entry of ` + "`SOURCE_DSN_PARAMETERS`" + `
([catalog.md](catalog.md#several-sources-and-shards)).
`
