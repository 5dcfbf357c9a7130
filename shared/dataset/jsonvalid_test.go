package dataset

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var jsonCases = []struct {
	in   string
	want bool
}{
	{`{}`, true}, {` {"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"]} `, true}, {`"héllo ✓"`, true},
	{`0`, true}, {`-0.0E-0`, true}, {`[]`, true}, {`[[[]]]`, true}, {`{"a":{"b":{}}}`, true},
	{"\"\xff\"", false}, {"{\"k\xc3\":1}", false}, {"\"\xed\xa0\x80\"", false}, // invalid UTF-8, a surrogate encoded
	{``, false}, {` `, false}, {`{`, false}, {`{"a"}`, false}, {`{"a":1,}`, false}, {`[1,]`, false},
	{`01`, false}, {`1.`, false}, {`.5`, false}, {`1e`, false}, {`-`, false}, {`+1`, false},
	{`NaN`, false}, {`Infinity`, false}, {`tru`, false}, {`nul`, false}, {`"a`, false}, {`"\x"`, false},
	{`"\u12"`, false}, {`"\u12G4"`, false}, {"\"a\tb\"", false}, {`{} {}`, false}, {`[1 2]`, false},
	{`{"a" 1}`, false}, {`{1:2}`, false}, {`"\`, false},
	{strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth), true},
	{strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1), false},
}

func TestValidJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range jsonCases {
		if got := ValidJSON([]byte(tc.in)); got != tc.want {
			t.Errorf("ValidJSON(%.40q) = %v, want %v", tc.in, got, tc.want)
		}
		// The reference: the standard library's syntax check and a UTF-8
		// check, in two passes.
		if ref := json.Valid([]byte(tc.in)) && utf8.ValidString(tc.in); ref != tc.want {
			t.Errorf("reference disagrees on %.40q: %v", tc.in, ref)
		}
	}
}

// FuzzValidJSON holds ValidJSON to the two-pass reference on any input.
func FuzzValidJSON(f *testing.F) {
	for _, tc := range jsonCases {
		if len(tc.in) < 200 {
			f.Add([]byte(tc.in))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, ref := ValidJSON(b), json.Valid(b) && utf8.Valid(b); got != ref {
			t.Fatalf("ValidJSON(%q) = %v, reference %v", b, got, ref)
		}
	})
}
