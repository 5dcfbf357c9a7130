package jobs

// The one decoder of queue messages. A message is one JSON object whose
// member names are the fields' names exactly: encoding/json's v1 decoder
// would take "ACCOUNT_ID" for account_id (it folds case) and let the last of
// two "account_id" members win, so a body read one way by a person or a
// filter would be exported another way. The decoder (encoding/json/v2
// semantics, the standard library's encoding/json/v2) matches names
// exactly, refuses a name given twice at any depth, refuses unknown
// members, invalid UTF-8 and anything after the object.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"encoding/json/jsontext"
	json "encoding/json/v2"
)

// decodeObject decodes body, one JSON object, into v (what names the kind
// of message in errors). strict also refuses members v has no field for;
// the kind probe passes false, the message's own decode true. Every error
// wraps ErrMalformed and names the member at fault.
func decodeObject(what, body string, v any, strict bool) error {
	b := []byte(body)
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: body is not a JSON object: %s", ErrMalformed, describeStart(t))
	}
	err := json.Unmarshal(b, v, json.RejectUnknownMembers(strict))
	if err == nil {
		return nil
	}
	var (
		syn *jsontext.SyntacticError
		sem *json.SemanticError
	)
	switch {
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return fmt.Errorf("%w: %s: field %q is given more than once", ErrMalformed, what, member(syn.JSONPointer))
	case errors.As(err, &sem) && errors.Is(sem.Err, json.ErrUnknownName):
		return fmt.Errorf("%w: %s: unknown field %q (field names are matched exactly, in lower case)", ErrMalformed, what, member(sem.JSONPointer))
	case errors.As(err, &syn):
		return fmt.Errorf("%w: body is not a JSON object: %v", ErrMalformed, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
}

// member is the member a JSON pointer names: its name at the top level,
// its path (a/b) below.
func member(p jsontext.Pointer) string { return strings.TrimPrefix(string(p), "/") }

// describeStart says what a body that is not an object starts with.
func describeStart(b []byte) string {
	if len(b) == 0 {
		return "it is empty"
	}
	r, _ := utf8.DecodeRune(b)
	return fmt.Sprintf("it starts with %q", r)
}

// MaxRequestedBy bounds requested_by, in characters: an AWS assumed-role
// ARN, what `daybook` sends by default, takes up to 168.
const MaxRequestedBy = 256
