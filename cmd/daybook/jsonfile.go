package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// decodeJSON decodes one JSON document from b into v. Every error names the
// file and the line and column (1-based) where the decoder stopped; unknown
// fields are refused with the valid ones listed when strict is set.
func decodeJSON(name string, b []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == nil {
		if tok, terr := dec.Token(); terr != io.EOF {
			line, col := lineCol(b, dec.InputOffset())
			return fmt.Errorf("%s:%d:%d: unexpected %v after the JSON document", name, line, col, tok)
		}
		return nil
	}
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		off = dec.InputOffset()
		msg = err.Error()
	)
	switch {
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included.
		off, msg = syn.Offset-1, syn.Error()
	case errors.As(err, &typ):
		off = typ.Offset - 1
		msg = fmt.Sprintf("%s: a JSON %s where %s is expected", cmp.Or(typ.Field, "value"), typ.Value, typeName(typ.Type))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		off, msg = int64(len(b)), "the file ends before the JSON document does"
	case strings.HasPrefix(msg, "json: unknown field "):
		// The decoder reads the whole document before it finds the field.
		msg = strings.TrimPrefix(msg, "json: ")
		if f, err := strconv.Unquote(strings.TrimPrefix(msg, "unknown field ")); err == nil {
			if at := keyOffset(b, f); at >= 0 {
				off = int64(at)
			}
		}
		if fields := jsonFields(reflect.TypeOf(v), ""); len(fields) > 0 {
			msg += "; valid fields: " + strings.Join(fields, ", ")
		}
	default:
		// A value's own check (a date, a duration): point at the value it
		// quotes, and name its field.
		msg = strings.TrimPrefix(msg, "json: ")
		if q := quotedRE.FindString(msg); q != "" {
			if at := bytes.Index(b, []byte(q)); at >= 0 {
				off = int64(at)
				if m := keyBeforeRE.FindSubmatch(b[:at]); m != nil {
					msg = string(m[1]) + ": " + msg
				}
			}
		}
	}
	line, col := lineCol(b, off)
	return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
}

var (
	quotedRE    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	keyBeforeRE = regexp.MustCompile(`"([^"]+)"\s*:\s*$`)
)

// keyOffset is the offset of the first "key": in b, or -1.
func keyOffset(b []byte, key string) int {
	re := regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(key)) + `\s*:`)
	if loc := re.FindIndex(b); loc != nil {
		return loc[0]
	}
	return -1
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(b []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// jsonFields lists the JSON field names of a struct type, nested objects as
// parent.child.
func jsonFields(t reflect.Type, prefix string) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, prefix+name)
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() != "time" && f.Type.NumField() > 0 && f.Type.Name() != "Date" {
			out = append(out, jsonFields(f.Type, prefix+name+".")...)
		}
	}
	sort.Strings(out)
	return out
}
