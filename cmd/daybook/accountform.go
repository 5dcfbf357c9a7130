package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
)

// formProblems checks an account file's JSON against the account's fields
// before it is decoded, and returns every problem at once (the decoder stops
// at the first): an unknown field, a value of the wrong JSON type, a value its
// field cannot read (a date, a duration). Each names the file, line and
// column, the field's path (destination.settle_delay), the form expected and
// an example, in the file's own terms. nil when the file has the account's
// shape (a syntax error is left to the decoder, which places it).
func formProblems(name string, b []byte) error {
	var doc json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	var errs []error
	walkForm(name, b, 0, "", doc, reflect.TypeOf(account.Account{}), &errs)
	if len(errs) == 0 {
		return nil
	}
	return &fileError{file: name, errs: errs}
}

// formOf is the form and an example of a field's JSON value.
func formOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeOf(civil.Date{}):
		return `a date, YYYY-MM-DD (e.g. "2026-11-01")`
	case reflect.TypeOf(account.Duration(0)):
		return `a duration (e.g. "2h" or "90m")`
	case reflect.TypeOf(time.Time{}):
		return `a time, RFC 3339 (e.g. "2026-11-01T00:00:00Z")`
	}
	switch t.Kind() {
	case reflect.String:
		return `a string (e.g. "text")`
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return "a number (e.g. 3)"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.SplitN(formOf(t.Elem()), " (", 2)[0], "a ") + "s (e.g. [\"events\"])"
	case reflect.Struct, reflect.Map:
		return "an object ({...})"
	}
	return t.String()
}

// jsonKind is how a value reads in the file: "a string", "a number", ...
func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '"':
		return "the string " + string(t)
	case t[0] == '{':
		return "an object"
	case t[0] == '[':
		return "a list"
	case t[0] == 't' || t[0] == 'f':
		return string(t)
	case t[0] == 'n':
		return "null"
	}
	return "the number " + string(bytes.TrimSpace(raw))
}

// readsAs reports whether raw's JSON type can be t's.
func readsAs(raw json.RawMessage, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	c := bytes.TrimSpace(raw)
	if len(c) == 0 {
		return false
	}
	if c[0] == 'n' {
		return true // null leaves the field as it is
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()) || t == reflect.TypeOf(time.Time{}) {
		return c[0] == '"'
	}
	switch t.Kind() {
	case reflect.String:
		return c[0] == '"'
	case reflect.Bool:
		return c[0] == 't' || c[0] == 'f'
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return c[0] == '-' || (c[0] >= '0' && c[0] <= '9')
	case reflect.Slice:
		return c[0] == '['
	case reflect.Struct, reflect.Map:
		return c[0] == '{'
	}
	return true
}

// walkForm checks raw, found at or after offset from in b, against t
// (path names it).
func walkForm(name string, b []byte, from int, path string, raw json.RawMessage, t reflect.Type, errs *[]error) {
	at := func(key string) int {
		if key == "" {
			return from
		}
		if i := keyOffset(b[from:], key); i >= 0 {
			return from + i
		}
		return from
	}
	problem := func(key string, format string, args ...any) {
		line, col := lineCol(b, int64(at(key)))
		*errs = append(*errs, fmt.Errorf("%s:%d:%d: %s", name, line, col, fmt.Sprintf(format, args...)))
	}
	field := path
	if field == "" {
		field = "the account"
	}
	key := path[strings.LastIndex(path, ".")+1:]
	if !readsAs(raw, t) {
		problem(key, "%s: %s, want %s", field, jsonKind(raw), formOf(t))
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeOf(civil.Date{}) && t != reflect.TypeOf(time.Time{}):
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if n != "-" && f.IsExported() {
				fields[n] = f.Type
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return at(keys[i]) < at(keys[j]) })
		for _, k := range keys {
			sub := strings.TrimPrefix(path+"."+k, ".")
			ft, ok := fields[k]
			if !ok {
				valid := make([]string, 0, len(fields))
				for n := range fields {
					valid = append(valid, n)
				}
				sort.Strings(valid)
				problem(k, "%s: unknown field; valid fields here: %s", sub, strings.Join(valid, ", "))
				continue
			}
			walkForm(name, b, at(k), sub, obj[k], ft, errs)
		}
	case t.Kind() == reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return
		}
		for i, it := range items {
			if !readsAs(it, t.Elem()) {
				problem(key, "%s[%d]: %s, want %s", field, i, jsonKind(it), formOf(t.Elem()))
			}
		}
	default:
		// The field's own reading: a date, a duration, a time.
		v := reflect.New(t)
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			var typ *json.UnmarshalTypeError
			msg := err.Error()
			if errors.As(err, &typ) {
				msg = "not readable"
			}
			problem(key, "%s: %s is not %s (%s)", field, jsonKind(raw), formOf(t), strings.TrimPrefix(msg, "json: "))
		}
	}
}
