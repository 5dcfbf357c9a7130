// Command iamreport sums up the policy checks of a test run (the
// summaries each test binary wrote under .local/iamcheck, package
// iamcheck): how many calls were checked and denied, the distinct
// (function, action, key prefix) triples the tests exercised, and the
// statements of template.yaml's function policies no call reached. It
// fails when a call was denied or a statement is unreached: a statement no
// test reaches is either covered by a new test or removed from the
// template (least privilege). `make test` runs it after the tests.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
)

func main() {
	dir := flag.String("dir", iamcheck.SummaryDir, "the summaries the test binaries wrote")
	tmpl := flag.String("template", "template.yaml", "the SAM template")
	out := flag.String("out", "", "also write the report to this file")
	flag.Parse()
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iamreport:", err)
			os.Exit(1)
		}
		defer f.Close()
		w = io.MultiWriter(os.Stdout, f)
	}
	ok, err := report(context.Background(), w, *dir, *tmpl)
	if err != nil {
		fmt.Fprintln(os.Stderr, "iamreport:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// report writes the run's summary to w; ok is false when a call was
// denied or a statement is unreached.
func report(ctx context.Context, w io.Writer, dir, tmpl string) (bool, error) {
	// Every function and statement: the console with its actions.
	p, err := iamcheck.Load(ctx, tmpl, iamcheck.Deployment{Account: awsclient.LocalAccountID, Region: "us-east-1",
		Params: map[string]string{"DeployConsole": "true", "ConsoleActions": "true"}})
	if err != nil {
		return false, err
	}
	t, err := iamcheck.Summarize(dir, p)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "policy checks (iamcheck) of %d test packages: %s\n", len(t.Packages), strings.Join(t.Packages, ", "))
	fmt.Fprintf(w, "  %d authorizations checked, %d denied; %d calls made with assumed customer-role sessions (not the template's)\n", t.Checked, t.Denied, t.Sessions)
	fmt.Fprintf(w, "  %d distinct (function, action, key prefix) triples exercised:\n", len(t.Triples))
	for _, tr := range slices.SortedFunc(maps.Keys(t.Triples), func(a, b iamcheck.Triple) int {
		return strings.Compare(a.Function+a.Action+a.Prefix, b.Function+b.Action+b.Prefix)
	}) {
		fmt.Fprintf(w, "    %-17s %-28s %-16s %d\n", tr.Function, tr.Action, tr.Prefix, t.Triples[tr])
	}
	fmt.Fprintf(w, "  %d of the template's %d function policy statements reached\n", len(t.Reached), len(t.Reached)+len(t.Unreached))
	for _, k := range t.UnusedKeys {
		fmt.Fprintf(w, "  unused: %s/%s allows the leading key %s, which no call used\n", k.Role, k.Statement, k.Pattern)
	}
	for _, s := range t.Unreached {
		fmt.Fprintf(w, "  UNREACHED: %s: no call of any test was allowed by it; cover it with a test or remove it from template.yaml\n", s)
	}
	return t.Denied == 0 && len(t.Unreached) == 0, nil
}
