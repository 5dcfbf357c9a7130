package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEHelpIsTheHelp: README's copy of `daybook --help` is the
// command list the CLI prints, every group in its order (it lacked the
// catalog group and had reseed before requeue).
func TestREADMEHelpIsTheHelp(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const intro = "`daybook --help` lists the commands and `daybook COMMAND --help` explains each one:\n\n```\n"
	i := strings.Index(string(b), intro)
	if i < 0 {
		t.Fatal("README has no copy of daybook --help")
	}
	copied := string(b[i+len(intro):])
	copied = copied[:strings.Index(copied, "```")]
	a, _, _ := testApp(t)
	r := execute(t, a, "--help")
	help := r.stdout
	start, end := strings.Index(help, "The export ledger:"), strings.Index(help, "Other commands:")
	if r.code != 0 || start < 0 || end < start {
		t.Fatalf("daybook --help: exit %d\n%s", r.code, help)
	}
	if want := strings.TrimRight(help[start:end], "\n") + "\n"; copied != want {
		t.Errorf("README's copy of daybook --help:\n%s\nthe CLI prints:\n%s", copied, want)
	}
}
