package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stepMark is a step of the commit protocol where generation.go takes it.
var stepMark = regexp.MustCompile(`(?m)^\s*// Step (\d+): ([^.]+)\.`)

// docStep is a step of the commit protocol as docs/architecture.md lists it.
var docStep = regexp.MustCompile(`(?m)^(\d+)\. \*\*([^*]+)\*\*:`)

// TestCommitStepsDocumented: the numbered steps of the commit protocol in
// docs/architecture.md are the steps generation.go takes, by number and
// name, in the order the file takes them.
func TestCommitStepsDocumented(t *testing.T) {
	code, err := os.ReadFile("generation.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Commit protocol")
	if !ok {
		t.Fatal(`docs/architecture.md has no "### Commit protocol" section`)
	}
	if end := strings.Index(section, "\n#"); end >= 0 {
		section = section[:end]
	}
	steps := func(re *regexp.Regexp, text, where string) []string {
		var out []string
		for i, m := range re.FindAllStringSubmatch(text, -1) {
			if n, _ := strconv.Atoi(m[1]); n != i+1 {
				t.Errorf("%s: step %q is numbered %d, the %d. step", where, m[2], n, i+1)
			}
			out = append(out, m[2])
		}
		return out
	}
	taken := steps(stepMark, string(code), "generation.go")
	listed := steps(docStep, section, "docs/architecture.md")
	if len(taken) == 0 || !slices.Equal(taken, listed) {
		t.Errorf("the commit protocol's steps:\ngeneration.go takes   %q\narchitecture.md lists %q", taken, listed)
	}
}
