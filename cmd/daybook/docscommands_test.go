package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// docPages are the pages an operator reads: README.md and docs/*.md.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	pages := map[string]string{}
	for _, f := range append(files, "../../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[strings.TrimPrefix(f, "../../")] = string(b)
	}
	if len(pages) < 5 {
		t.Fatalf("found %d pages", len(pages))
	}
	return pages
}

var (
	fenceBlock = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	codeSpan   = regexp.MustCompile("`([^`\n]+)`")
	// commandWord is a word of a command path: a subcommand's name.
	commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// docCommand is one `daybook ...` a page shows: the words after daybook
// up to the first flag, placeholder or punctuation.
type docCommand struct {
	page, text string
	words      []string
}

// docCommands finds every daybook command the pages show, in code blocks
// and in code spans, whatever runs it (`daybook`, `.local/bin/daybook`,
// `go run ./cmd/daybook`).
func docCommands(pages map[string]string) []docCommand {
	var out []docCommand
	for page, text := range pages {
		var code []string
		for _, m := range fenceBlock.FindAllStringSubmatch(text, -1) {
			code = append(code, strings.Split(m[1], "\n")...)
		}
		for _, m := range codeSpan.FindAllStringSubmatch(fenceBlock.ReplaceAllString(text, ""), -1) {
			code = append(code, m[1])
		}
		for _, line := range code {
			for i := 0; ; {
				j := strings.Index(line[i:], "daybook ")
				if j < 0 {
					break
				}
				at := i + j
				i = at + len("daybook ")
				if at > 0 && !strings.ContainsRune(" /(`\"'=", rune(line[at-1])) {
					continue // acct_daybook, daybook-dev, ...
				}
				var words []string
				for _, w := range strings.Fields(line[i:]) {
					if !commandWord.MatchString(w) {
						break
					}
					words = append(words, w)
				}
				if len(words) > 0 {
					out = append(out, docCommand{page, strings.TrimSpace(line[at:]), words})
				}
			}
		}
	}
	return out
}

// walk follows words down root's subcommands; it returns the deepest
// command reached and how many words named one.
func walk(root *cobra.Command, words []string) (*cobra.Command, int) {
	c, n := root, 0
	for _, w := range words {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == w || slices.Contains(sub.Aliases, w) {
				next = sub
			}
		}
		if next == nil {
			break
		}
		c, n = next, n+1
	}
	return c, n
}

// TestDocumentedCommandsAreInTheHelp: every `daybook ...` command a page
// shows (README.md and docs/*.md, in code blocks and code spans, however
// it is run) names a command `daybook --help` lists, and a group's word
// after it names one of its subcommands; a command the CLI does not have
// fails. TestREADMECommandsExist also parses the flags of the lines it runs.
func TestDocumentedCommandsAreInTheHelp(t *testing.T) {
	a, _, _ := testApp(t)
	root := a.rootCommand()
	cmds := docCommands(docPages(t))
	if len(cmds) < 50 {
		t.Fatalf("found %d daybook commands in the docs: the scan is broken", len(cmds))
	}
	for _, dc := range cmds {
		c, n := walk(root, dc.words)
		switch {
		case n == 0 && strings.ToUpper(dc.words[0]) != dc.words[0]:
			t.Errorf("%s: `%s`: daybook has no command %q (daybook --help)", dc.page, dc.text, dc.words[0])
		case n > 0 && n < len(dc.words) && c.HasSubCommands():
			t.Errorf("%s: `%s`: daybook %s has no subcommand %q", dc.page, dc.text, c.Name(), dc.words[n])
		}
	}
}

// TestHelpCommandsAreDocumented: every command and subcommand `daybook
// --help` lists (each group's, and each group command's own) is shown on
// some page, as `daybook NAME [SUB]` in code; a command added without a
// word in the docs fails.
func TestHelpCommandsAreDocumented(t *testing.T) {
	a, _, _ := testApp(t)
	root := a.rootCommand()
	shown := map[string]bool{}
	for _, dc := range docCommands(docPages(t)) {
		c, n := walk(root, dc.words)
		for ; n > 0; n-- {
			shown[c.CommandPath()] = true
			c = c.Parent()
		}
	}
	var listed []string
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		listed = append(listed, c.CommandPath())
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && sub.Name() != "help" {
				listed = append(listed, sub.CommandPath())
			}
		}
	}
	if len(listed) < 20 {
		t.Fatalf("daybook --help lists %d commands: the walk is broken", len(listed))
	}
	for _, p := range listed {
		if !shown[p] {
			t.Errorf("%s is in daybook --help but on no page (README.md, docs/*.md)", p)
		}
	}
}
