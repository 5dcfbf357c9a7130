// Package envvar parses a function's configuration from environment
// variables once, at start-up, collecting every problem with the variable's
// name and value so a misconfigured deploy fails with one clear message.
//
// It also defines the default of every deployment setting once, and reads the
// variables more than one program reads (DAYBOOK_STAGE, SETTLE_DELAY, the log
// level, MAX_BACKFILL_DAYS) in one place: see daybook.go.
package envvar

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables through lookup and remembers every error.
type Reader struct {
	lookup func(string) (string, bool)
	errs   []error
}

// Lookup reads through lookup (os.LookupEnv, or a map's).
func Lookup(lookup func(string) (string, bool)) *Reader { return &Reader{lookup: lookup} }

// From reads from a map (tests, the CLI).
func From(m map[string]string) *Reader {
	return &Reader{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

// Environ is environ's KEY=VALUE pairs (os.Environ) as a map, for From:
// a function reads its environment once, at start-up.
func Environ(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// Lookup reads a variable as os.LookupEnv does, for parsers of their own
// (account.RulesFromEnv, awsclient.Local); their errors are theirs.
func (r *Reader) Lookup(name string) (string, bool) { return r.lookup(name) }

// Err joins every problem seen so far, or is nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

func (r *Reader) fail(name, value, why string) {
	r.errs = append(r.errs, fmt.Errorf("environment variable %s=%q: %s", name, value, why))
}

// String returns a required non-empty variable.
func (r *Reader) String(name string) string {
	v, ok := r.lookup(name)
	if !ok || v == "" {
		r.errs = append(r.errs, fmt.Errorf("environment variable %s is required", name))
	}
	return v
}

// StringOr returns the variable or def when unset or empty.
func (r *Reader) StringOr(name, def string) string {
	if v, ok := r.lookup(name); ok && v != "" {
		return v
	}
	return def
}

// Int returns a positive integer variable, def when unset.
func (r *Reader) Int(name string, def int) int {
	v, ok := r.lookup(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		r.fail(name, v, "want a whole number >= 0")
		return def
	}
	return n
}

// Seconds returns a duration given in whole seconds, def when unset.
func (r *Reader) Seconds(name string, def time.Duration) time.Duration {
	v, ok := r.lookup(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		r.fail(name, v, "want whole seconds >= 0")
		return def
	}
	return time.Duration(n) * time.Second
}

// Duration returns a Go duration ("2h", "90m"), def when unset.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v, ok := r.lookup(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		r.fail(name, v, "want a duration such as 2h or 90m")
		return def
	}
	return d
}
