package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
)

// decodeJSON decodes one JSON document from b into v. Every error names the
// file and the line and column (1-based) where the decoder stopped.
func decodeJSON(name string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	err := dec.Decode(v)
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		off = dec.InputOffset()
		msg string
	)
	switch {
	case err == nil:
		tok, terr := dec.Token()
		if terr == io.EOF {
			return nil
		}
		off, msg = dec.InputOffset(), fmt.Sprintf("unexpected %v after the JSON document", tok)
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included.
		off, msg = syn.Offset-1, syn.Error()
	case errors.As(err, &typ):
		off = typ.Offset - 1
		msg = fmt.Sprintf("%s: a JSON %s, want %s", cmp.Or(typ.Field, "value"), typ.Value, formOf(typ.Type))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		off, msg = int64(len(b)), "the file ends before the JSON document does"
	default:
		msg = strings.TrimPrefix(err.Error(), "json: ")
	}
	line, col := lineCol(b, off)
	return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(b []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// member is one value of a JSON document: the document itself, a member of
// an object or an element of an array.
type member struct {
	field       string // its path as errors name it: destination.role_arn, datasets[1]; "" for the document
	at          int64  // where errors point: its name, or for an element its value
	start, end  int64  // its value
	open, close string // the objects and arrays it is in, as JSON: `{"destination":{"role_arn":` and `}}`
}

// members lists every value of the one JSON document in b, in the file's
// order, each object or array before what it holds. Like encoding/json, it
// takes a name given twice and invalid UTF-8.
func members(b []byte) ([]member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var (
		out       []member
		inside    []int // the objects and arrays being read, as indices in out
		key       string
		keyAt     int64
		keyQuoted []byte
	)
	for len(out) == 0 || dec.StackDepth() > 0 {
		kind, n := dec.StackIndex(dec.StackDepth())
		start := dec.InputOffset()
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		start += int64(len(b[start:]) - len(bytes.TrimLeft(b[start:], " \t\r\n,:")))
		end := dec.InputOffset()
		switch t := tok.Kind(); {
		case t == '}' || t == ']':
			out[inside[len(inside)-1]].end = end
			inside = inside[:len(inside)-1]
			continue
		case kind == '{' && n%2 == 0:
			key, keyAt, keyQuoted = tok.String(), start, b[start:end]
			continue
		}
		m := member{at: start, start: start, end: end}
		if len(inside) > 0 {
			p := out[inside[len(inside)-1]]
			if kind == '{' {
				m.at, m.field = keyAt, strings.TrimPrefix(p.field+"."+key, ".")
				m.open, m.close = p.open+"{"+string(keyQuoted)+":", "}"+p.close
			} else {
				m.field = fmt.Sprintf("%s[%d]", p.field, n)
				m.open, m.close = p.open+"[", "]"+p.close
			}
		}
		if t := tok.Kind(); t == '{' || t == '[' {
			inside = append(inside, len(out))
		}
		out = append(out, m)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("more than one JSON document")
	}
	return out, nil
}

// formOf is the form and an example of a field's JSON value.
func formOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case nil:
		return "another kind of value"
	case reflect.TypeFor[civil.Date]():
		return `a date, YYYY-MM-DD (e.g. "2026-11-01")`
	case reflect.TypeFor[account.Duration]():
		return `a duration (e.g. "2h" or "90m")`
	case reflect.TypeFor[time.Time]():
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

// jsonKind is how a value reads in the file: `the string "x"`, `a list`, ...
func jsonKind(v jsontext.Value) string {
	switch v.Kind() {
	case '"':
		return "the string " + string(v)
	case '0':
		return "the number " + string(v)
	case '{':
		return "an object"
	case '[':
		return "a list"
	}
	return string(v) // true, false, null
}
