package envvar

import (
	"strings"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	t.Parallel()
	r := From(map[string]string{"A": "x", "N": "12", "BAD": "twelve", "D": "2h", "S": "900", "BADD": "soon"})
	if got := r.String("A"); got != "x" {
		t.Errorf("String = %q", got)
	}
	if got := r.Int("N", 1); got != 12 {
		t.Errorf("Int = %d", got)
	}
	if got := r.Duration("D", 0); got != 2*time.Hour {
		t.Errorf("Duration = %s", got)
	}
	if got := r.Seconds("S", 0); got != 15*time.Minute {
		t.Errorf("Seconds = %s", got)
	}
	if got := r.Int("UNSET", 7); got != 7 {
		t.Errorf("default = %d", got)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("unexpected error %v", err)
	}
	r.Int("BAD", 1)
	r.String("MISSING")
	r.Duration("BADD", 0)
	err := r.Err()
	for _, want := range []string{`BAD="twelve"`, "MISSING is required", `BADD="soon"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// TestEnviron: os.Environ's pairs become a map; a value keeps its own '='.
func TestEnviron(t *testing.T) {
	t.Parallel()
	got := Environ([]string{"A=1", "DSN=host=db user=x", "EMPTY=", "ODD"})
	want := map[string]string{"A": "1", "DSN": "host=db user=x", "EMPTY": "", "ODD": ""}
	if len(got) != len(want) {
		t.Fatalf("Environ = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Environ[%s] = %q, want %q", k, got[k], v)
		}
	}
}
