package main

import (
	"cmp"
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
)

// formProblems checks an account file's JSON against the account's fields
// before it is decoded, and returns every problem at once (the decoder stops
// at the first): an unknown field, a value of the wrong JSON type, a value its
// field cannot read (a date, a duration). Each names the file, line and
// column, the field's path (destination.settle_delay), the form expected and
// an example, in the file's own terms. nil when the file has the account's
// shape (a syntax error is left to the decoder, which places it).
//
// Each value is decoded on its own, in the objects and arrays it is in (an
// object or array as an empty one, its contents in turn), so that one
// problem does not hide the next; names are matched exactly.
func formProblems(name string, b []byte) error {
	ms, err := members(b)
	if err != nil {
		return nil
	}
	var (
		errs    []error
		refused int64 // the end of the last refused value: what it holds is not checked
	)
	for _, m := range ms {
		if m.start < refused {
			continue
		}
		v := jsontext.Value(b[m.start:m.end])
		probe := string(v)
		switch v.Kind() {
		case '{':
			probe = "{}"
		case '[':
			probe = "[]"
		}
		var sem *jsonv2.SemanticError
		if err := jsonv2.Unmarshal([]byte(m.open+probe+m.close), new(account.Account), jsonv2.RejectUnknownMembers(true)); !errors.As(err, &sem) {
			continue
		}
		var msg string
		switch {
		case errors.Is(sem.Err, jsonv2.ErrUnknownName):
			msg = "unknown field; valid fields here: " + strings.Join(fieldNames(sem.GoType), ", ")
		case sem.Err != nil && v.Kind() == '"':
			// The field's own reading: a date, a duration, a time.
			msg = fmt.Sprintf("%s is not %s (%v)", jsonKind(v), formOf(sem.GoType), sem.Err)
		default:
			msg = fmt.Sprintf("%s, want %s", jsonKind(v), formOf(sem.GoType))
		}
		line, col := lineCol(b, m.at)
		errs = append(errs, fmt.Errorf("%s:%d:%d: %s: %s", name, line, col, cmp.Or(m.field, "the account"), msg))
		refused = m.end
	}
	if len(errs) == 0 {
		return nil
	}
	return &fileError{file: name, errs: errs}
}

// fieldNames lists the JSON names of a struct's fields, sorted.
func fieldNames(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "-" {
			names = append(names, cmp.Or(name, f.Name))
		}
	}
	slices.Sort(names)
	return names
}
