package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/daybook-dev/daybook/shared/account"
)

// readAccountFile reads the `account put` JSON (path "-" is stdin). Errors
// name the file, line and column, and list the valid fields.
func readAccountFile(path string, stdin io.Reader) (account.Account, []byte, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return account.Account{}, nil, fmt.Errorf("account file: %w", err)
	}
	var a account.Account
	name := path
	if path == "-" {
		name = "stdin"
	}
	if err := formProblems(name, b); err != nil {
		return account.Account{}, nil, err
	}
	if err := decodeJSON(name, b, &a, true); err != nil {
		return account.Account{}, nil, fmt.Errorf("account file %w", err)
	}
	return a, b, nil
}

// fileFields are the fields writeBackFields adds to an account file; empty
// ones are left alone.
type fileFields struct {
	id         string // "id", added as the first field
	externalID string // destination.external_id, after destination.role_arn (or replacing an empty one)
}

// writeBackFields adds the fields to the JSON object in the account file,
// keeping the rest of the file byte for byte, and replaces the file
// atomically (a temporary file renamed over it, same mode). The result is
// decoded again, and must carry the new values, before it replaces
// anything.
func writeBackFields(path string, orig []byte, add fileFields) error {
	if path == "-" {
		return errors.New("the account came from stdin")
	}
	out := orig
	var err error
	// The external id first: it sits after the top object's opening brace,
	// where the id goes, so inserting it leaves that offset unchanged.
	if add.externalID != "" {
		if out, err = withExternalID(out, add.externalID); err != nil {
			return err
		}
	}
	if add.id != "" {
		if out, err = withID(out, add.id); err != nil {
			return err
		}
	}
	var check account.Account
	if err := decodeJSON(path, out, &check, true); err != nil ||
		(add.id != "" && check.ID != add.id) || (add.externalID != "" && check.Destination.ExternalID != add.externalID) {
		return fmt.Errorf("could not add the fields without breaking the file (%v)", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), st.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// withID adds "id": "<id>" as the first field of the JSON object in orig,
// indented like the next field.
func withID(orig []byte, id string) ([]byte, error) {
	i := bytes.IndexByte(orig, '{')
	if i < 0 {
		return nil, errors.New("no JSON object in the file")
	}
	rest := orig[i+1:]
	trimmed := bytes.TrimLeft(rest, " \t\r\n")
	field := `"id": ` + strconv.Quote(id) + ","
	var ins string
	lead := rest[:len(rest)-len(trimmed)]
	if nl := bytes.LastIndexByte(lead, '\n'); nl >= 0 {
		// Pretty-printed: the same indentation as the next field.
		ins = "\n" + string(lead[nl+1:]) + field
	} else {
		ins = " " + field
	}
	return slices.Concat(orig[:i+1], []byte(ins), rest), nil
}

// withExternalID sets destination.external_id in orig: it replaces the value
// of an external_id field that is there (empty), or adds the field right
// after role_arn, on its own line with the same indentation when role_arn
// has one.
func withExternalID(orig []byte, externalID string) ([]byte, error) {
	quoted := strconv.Quote(externalID)
	sp, err := destinationSpans(orig)
	if err != nil {
		return nil, err
	}
	if sp.extKeyEnd > 0 {
		q := bytes.IndexByte(orig[sp.extKeyEnd:sp.extValueEnd], '"')
		if q < 0 {
			return nil, errors.New("destination.external_id is not a string")
		}
		start := sp.extKeyEnd + q
		return slices.Concat(orig[:start], []byte(quoted), orig[sp.extValueEnd:]), nil
	}
	if sp.roleKeyStart < 0 {
		return nil, errors.New("no destination.role_arn in the file")
	}
	field := `"external_id": ` + quoted
	ins := ", " + field
	if nl := bytes.LastIndexByte(orig[:sp.roleKeyStart], '\n'); nl >= 0 {
		if indent := orig[nl+1 : sp.roleKeyStart]; len(bytes.TrimLeft(indent, " \t")) == 0 {
			ins = ",\n" + string(indent) + field
		}
	}
	return slices.Concat(orig[:sp.roleValueEnd], []byte(ins), orig[sp.roleValueEnd:]), nil
}

// spans are byte offsets in an account file: where the destination's
// role_arn key starts and its value ends, and where its external_id key
// ends and its value ends (0 when there is none).
type spans struct {
	roleKeyStart, roleValueEnd int
	extKeyEnd, extValueEnd     int
}

// destinationSpans finds the destination's role_arn and external_id in an
// account file's JSON.
func destinationSpans(b []byte) (spans, error) {
	sp := spans{roleKeyStart: -1}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return sp, errors.New("no JSON object in the file")
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return sp, err
		}
		if k != "destination" {
			if err := skipValue(dec); err != nil {
				return sp, err
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return sp, errors.New("destination is not a JSON object")
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return sp, err
			}
			keyEnd := int(dec.InputOffset())
			if err := skipValue(dec); err != nil {
				return sp, err
			}
			valueEnd := int(dec.InputOffset())
			switch k {
			case "role_arn":
				sp.roleKeyStart = bytes.LastIndex(b[:keyEnd], []byte(`"role_arn"`))
				sp.roleValueEnd = valueEnd
			case "external_id":
				sp.extKeyEnd, sp.extValueEnd = keyEnd, valueEnd
			}
		}
		return sp, nil
	}
	return sp, errors.New("no destination in the file")
}

// skipValue reads one JSON value, however nested.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// checkBucketPattern refuses a destination the deployment's exporter may
// not write with its own role: without a role_arn, a bucket outside
// DirectBucketPattern (a stack output; unknown means unchecked). Roles are
// checked against the deployment's CUSTOMER_ROLE_PATTERN by
// account.Validate.
func checkBucketPattern(a account.Account, bucketPattern string) error {
	d := a.Destination
	// The pattern is the exporter role's S3 statement: a GCS bucket or an
	// Azure container is reached with the customer's own grant instead.
	if d.Kind() == account.StoreS3 && d.RoleARN == "" && bucketPattern != "" && !account.MatchWildcard(bucketPattern, d.Bucket) {
		return fmt.Errorf("destination.bucket %q: without a role_arn the exporter writes with its own role, which may only write buckets named like %s (the stack's DirectBucketPattern); give the account a role_arn and external_id, or use such a bucket", d.Bucket, bucketPattern)
	}
	return nil
}

// checkGluePattern refuses a Glue registration the deployment's exporter may
// not make with its own role: without a role_arn, a glue.database outside
// DirectGlueDatabasePattern (a stack output; unknown means unchecked), the
// databases its DirectGlueTables statement grants. Accounts written with
// that role share the deployment's Glue catalog.
func checkGluePattern(a account.Account, gluePattern string) error {
	d := a.Destination
	if d.RoleARN == "" && d.Glue != nil && gluePattern != "" && !account.MatchWildcard(gluePattern, d.Glue.Database) {
		return fmt.Errorf("destination.glue.database %q: without a role_arn the exporter registers tables with its own role, which may only write Glue databases named like %s (the stack's DirectGlueDatabasePattern); give the account a role_arn and external_id, or use such a database", d.Glue.Database, gluePattern)
	}
	return nil
}
