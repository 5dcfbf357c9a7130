package layout

import (
	"fmt"
	"regexp"
	"strings"
)

// The prefix template (F1, C4).
//
// A template is a relative path of `/`-separated segments. {{.AccountID}} must
// be one whole segment (`daybook/{{.AccountID}}`, not `daybook/x{{.AccountID}}`),
// so that every key of an account lies under a folder named by its id and two
// accounts' prefixes can be compared segment by segment (account.CheckIsolation).
//
// Characters. Outside the placeholders a template takes only
//
//	A-Z a-z 0-9 ! - _ . ( )     and / between segments
//
// This is the "safe characters" set of Amazon S3's object key naming
// guidelines (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html#object-key-guidelines:
// alphanumerics and ! - _ . * ' ( )) less two of them: `*` is a wildcard in
// IAM and bucket-policy resource ARNs and in the globs readers use on this
// layout (`dt=*/part-*`), so a literal `*` in a prefix makes a customer's
// policy or glob match other prefixes; `'` ends the SQL string literals of the
// load scripts and the shell-quoted commands of the README. Everything the
// guidelines say needs special handling (space, & $ @ = ; + , % # ...) or
// should be avoided (\ { } ^ [ ] ` ~ | < > ? and non-ASCII) is refused, so a
// key never needs escaping in a URL, an XML listing, a policy or a script.
//
// Length. S3 keys are at most 1,024 bytes (same page); CheckKeyLength checks
// the longest key daybook can write under a rendered prefix.

// MaxKeyBytes is S3's limit on the length of an object key, in UTF-8 bytes.
const MaxKeyBytes = 1024

// MaxEngineNameLen bounds the engine names of the load scripts
// (`_load/<engine>.sql`); the key length check assumes it. A test checks
// every shipped engine fits.
const MaxEngineNameLen = 16

// maxPartNumber is the widest data file number F1 names: part-NNNNN.
const maxPartNumber = 99999

// Vars are the values of the prefix placeholders.
type Vars struct {
	AccountID string
	Stage     string
}

// PrefixError is a refused prefix template or rendered prefix: Prefix is the
// value, Reason says why in words.
type PrefixError struct {
	Prefix string
	Reason string
}

func (e *PrefixError) Error() string { return fmt.Sprintf("prefix %q: %s", e.Prefix, e.Reason) }

func refuse(prefix, format string, args ...any) error {
	return &PrefixError{Prefix: prefix, Reason: fmt.Sprintf(format, args...)}
}

var (
	placeholderRE = regexp.MustCompile(`\{\{[^}]*\}\}`)
	// safeCharRE is the set a prefix (outside its placeholders) is made of.
	safeCharRE = regexp.MustCompile(`^[A-Za-z0-9!_.()/-]*$`)
)

// SafeChars describes the characters a prefix may use, for messages.
const SafeChars = "letters, digits, ! - _ . ( ) and / between segments"

// ValidatePrefix checks a prefix template without rendering it: only the
// known placeholders, {{.AccountID}} as a whole segment, only safe
// characters, and no empty, `.` or `..` segment; no leading slash. Errors are
// *PrefixError.
func ValidatePrefix(tmpl string) error {
	if tmpl == "" {
		return refuse(tmpl, "is empty")
	}
	for _, ph := range placeholderRE.FindAllString(tmpl, -1) {
		if ph != PlaceholderAccountID && ph != PlaceholderStage {
			return refuse(tmpl, "unknown placeholder %s (allowed: %s, %s)", ph, PlaceholderAccountID, PlaceholderStage)
		}
	}
	rest := placeholderRE.ReplaceAllString(tmpl, "x")
	if strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		return refuse(tmpl, "unbalanced {{ }}")
	}
	if i := strings.IndexFunc(rest, func(r rune) bool { return !safeCharRE.MatchString(string(r)) }); i >= 0 {
		r := []rune(rest[i:])[0]
		return refuse(tmpl, "character %q is not allowed (use %s)", r, SafeChars)
	}
	if err := checkPath(tmpl, rest); err != nil {
		return err
	}
	whole := false
	for _, seg := range strings.Split(strings.TrimSuffix(tmpl, "/"), "/") {
		if seg == PlaceholderAccountID {
			whole = true
		} else if strings.Contains(seg, PlaceholderAccountID) {
			return refuse(tmpl, "%s must be a whole segment, not part of %q (e.g. daybook/%s)", PlaceholderAccountID, seg, PlaceholderAccountID)
		}
	}
	if !whole {
		return refuse(tmpl, "must contain %s as a whole segment (e.g. daybook/%s), so each account's keys are under its own folder", PlaceholderAccountID, PlaceholderAccountID)
	}
	return nil
}

// ValidateRendered checks a rendered prefix, as a reader names it (no
// placeholders left): only safe characters and no empty, `.` or `..`
// segment; no leading slash. Errors are *PrefixError.
func ValidateRendered(prefix string) error {
	if prefix == "" {
		return refuse(prefix, "is empty")
	}
	if !safeCharRE.MatchString(prefix) {
		return refuse(prefix, "has a character outside %s", SafeChars)
	}
	return checkPath(prefix, prefix)
}

// RenderPrefix validates tmpl, substitutes the placeholders and checks the
// result (the values must be non-empty and safe too).
func RenderPrefix(tmpl string, v Vars) (string, error) {
	if err := ValidatePrefix(tmpl); err != nil {
		return "", err
	}
	for _, p := range []struct{ name, value string }{{PlaceholderAccountID, v.AccountID}, {PlaceholderStage, v.Stage}} {
		if !strings.Contains(tmpl, p.name) {
			continue
		}
		if p.value == "" {
			return "", refuse(tmpl, "the value of %s is empty", p.name)
		}
		if strings.Contains(p.value, "/") || !safeCharRE.MatchString(p.value) {
			return "", refuse(tmpl, "the value of %s, %q, is not one segment of %s", p.name, p.value, SafeChars)
		}
	}
	out := strings.NewReplacer(PlaceholderAccountID, v.AccountID, PlaceholderStage, v.Stage).Replace(tmpl)
	if err := checkPath(tmpl, out); err != nil {
		return "", err
	}
	return out, nil
}

func checkPath(tmpl, p string) error {
	if strings.HasPrefix(p, "/") {
		return refuse(tmpl, "must be relative (no leading /)")
	}
	for i, seg := range Segments(p) {
		switch seg {
		case "":
			return refuse(tmpl, "segment %d is empty", i+1)
		case ".", "..":
			return refuse(tmpl, "segment %d is %q", i+1, seg)
		}
	}
	return nil
}

// Segments splits a rendered prefix or key into its `/`-separated segments;
// one trailing slash is ignored.
func Segments(p string) []string { return strings.Split(clean(p), "/") }

// Within reports whether key (or a prefix) lies under prefix, comparing whole
// segments: `a/b/c` is within `a/b` and `a/b` is within itself, but `a/bc`
// is not within `a/b`.
func Within(key, prefix string) bool {
	k, p := Segments(key), Segments(prefix)
	if len(k) < len(p) {
		return false
	}
	for i := range p {
		if k[i] != p[i] {
			return false
		}
	}
	return true
}
