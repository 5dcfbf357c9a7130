package doctable

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRows(t *testing.T) {
	doc := "# T\n\n## A\n\nSome text.\n\n| x | y |\n|---|---|\n| `a` | 1 |\n| b | 2 |\n\nAfter.\n\n| z |\n|---|\n| no |\n\n## Empty\n\nnothing\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Rows(path, "## A")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a", "1"}, {"b", "2"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Rows = %q, want %q", got, want)
	}
	for _, h := range []string{"## Missing", "## Empty"} {
		if _, err := Rows(path, h); err == nil || !strings.Contains(err.Error(), h) {
			t.Errorf("Rows(%q): err = %v, want one naming the heading", h, err)
		}
	}
}
