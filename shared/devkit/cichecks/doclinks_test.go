package cichecks

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	mdFence   = regexp.MustCompile("(?s)```.*?```")
)

// anchor is GitHub's id of a heading: lower case, punctuation but - and _
// dropped, spaces as -.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(text, ""), -1) {
		out[anchor(m[1])] = true
	}
	return out
}

// TestDocLinksResolve: every relative link of README.md and docs/*.md
// names a file of the repository and, with a #fragment, a heading of that
// page (the README's moved sections left links behind).
func TestDocLinksResolve(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, m := range mdLink.FindAllStringSubmatch(mdFence.ReplaceAllString(text, ""), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(link, "#")
			target := page
			if file != "" {
				target = filepath.Join(filepath.Dir(page), file)
			}
			rel, _ := filepath.Rel(root, page)
			tb, err := os.ReadFile(target)
			if err != nil {
				if fi, serr := os.Stat(target); serr == nil && fi.IsDir() && frag == "" {
					checked++
					continue
				}
				t.Errorf("%s: link %s: %v", rel, link, err)
				continue
			}
			if frag != "" && !anchors(string(tb))[frag] {
				t.Errorf("%s: link %s: no heading with that anchor in %s", rel, link, file)
			}
			checked++
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d links: the scan is broken", checked)
	}
}

var (
	mdSpan   = regexp.MustCompile("`([^`\n]+)`")
	makeWord = regexp.MustCompile(`(?:^|[\s(])make ([a-z][a-z0-9-]*)`)
)

// TestDocumentedMakeTargets: every `make TARGET` a page shows in code
// (README.md and docs/*.md, blocks and spans) is a target of the
// Makefile: `make -n TARGET` knows it.
func TestDocumentedMakeTargets(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	targets := map[string]string{}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		var code []string
		for _, m := range mdFence.FindAllString(string(b), -1) {
			code = append(code, m)
		}
		for _, m := range mdSpan.FindAllStringSubmatch(mdFence.ReplaceAllString(string(b), ""), -1) {
			code = append(code, m[1])
		}
		rel, _ := filepath.Rel(root, page)
		for _, c := range code {
			for _, m := range makeWord.FindAllStringSubmatch(c, -1) {
				targets[m[1]] = rel
			}
		}
	}
	if len(targets) < 8 {
		t.Fatalf("found %d make targets in the docs: the scan is broken", len(targets))
	}
	for target, page := range targets {
		if out, err := exec.Command("make", "-n", "-C", root, target).CombinedOutput(); err != nil {
			t.Errorf("%s shows `make %s`: make -n %s: %v\n%s", page, target, target, err, out)
		}
	}
}

// maxREADMELines is how long README.md may grow: what daybook is, the two
// commands, a table of contents and one screen per task; the rest lives
// in docs/.
const maxREADMELines = 300

// TestREADMEIsNavigable: README.md stays at most maxREADMELines lines, and
// its "Contents" lists every section that follows it, in order, by its
// anchor (TestDocLinksResolve checks the anchors resolve).
func TestREADMEIsNavigable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > maxREADMELines {
		t.Errorf("README.md is %d lines, at most %d: move the detail to a page of docs/ and link it", n, maxREADMELines)
	}
	_, after, ok := strings.Cut(text, "\n## Contents\n")
	if !ok {
		t.Fatal(`README.md has no "## Contents" section`)
	}
	toc, rest, _ := strings.Cut(after, "\n## ")
	var listed, sections []string
	for _, m := range mdLink.FindAllStringSubmatch(toc, -1) {
		listed = append(listed, strings.TrimPrefix(m[1], "#"))
	}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString("## "+rest, ""), -1) {
		if strings.HasPrefix(m[0], "## ") {
			sections = append(sections, anchor(m[1]))
		}
	}
	if strings.Join(listed, " ") != strings.Join(sections, " ") {
		t.Errorf("README.md's Contents lists %v; its sections are %v", listed, sections)
	}
}
