package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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
	name := path
	if path == "-" {
		name = "stdin"
	}
	a, err := decodeAccount(name, b)
	if err != nil {
		return account.Account{}, nil, err
	}
	return a, b, nil
}

// decodeAccount decodes an account file's JSON, refusing it with every
// problem of its fields at once (formProblems), else with the decoder's.
func decodeAccount(name string, b []byte) (account.Account, error) {
	var a account.Account
	if err := formProblems(name, b); err != nil {
		return account.Account{}, err
	}
	if err := decodeJSON(name, b, &a); err != nil {
		return account.Account{}, fmt.Errorf("account file %w", err)
	}
	return a, nil
}

// fileFields are the fields writeBackFields adds to an account file; empty
// ones are left alone.
type fileFields struct {
	id         string // "id", added as the first field
	externalID string // destination.external_id, after destination.role_arn (or replacing an empty one)
}

// writeBackFields adds the fields to the JSON object in the account file,
// keeping the rest of the file byte for byte, and replaces the file
// atomically (writeFileAtomic, same mode). The result is decoded again, and
// must carry the new values, before it replaces anything.
func writeBackFields(path string, orig []byte, add fileFields) error {
	if path == "-" {
		return errors.New("the account came from stdin")
	}
	out := orig
	var err error
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
	check, err := decodeAccount(path, out)
	if err != nil || (add.id != "" && check.ID != add.id) || (add.externalID != "" && check.Destination.ExternalID != add.externalID) {
		return fmt.Errorf("could not add the fields without breaking the file (%v)", err)
	}
	return writeFileAtomic(path, out)
}

// withID adds "id": "<id>" as the first field of the JSON object in orig,
// indented like the next field.
func withID(orig []byte, id string) ([]byte, error) {
	i := bytes.IndexByte(orig, '{')
	if i < 0 {
		return nil, errors.New("no JSON object in the file")
	}
	rest := orig[i+1:]
	lead := rest[:len(rest)-len(bytes.TrimLeft(rest, " \t\r\n"))]
	ins := ` "id": ` + strconv.Quote(id) + ","
	if nl := bytes.LastIndexByte(lead, '\n'); nl >= 0 {
		// Pretty-printed: the same indentation as the next field.
		ins = "\n" + string(lead[nl+1:]) + ins[1:]
	}
	return slices.Concat(orig[:i+1], []byte(ins), rest), nil
}

// withExternalID sets destination.external_id in orig: it replaces the value
// of an external_id field that is there (empty), or adds the field right
// after role_arn, on its own line with the same indentation when role_arn
// has one.
func withExternalID(orig []byte, externalID string) ([]byte, error) {
	ms, err := members(orig)
	if err != nil {
		return nil, err
	}
	var role, ext *member
	for i, m := range ms {
		switch m.field {
		case "destination.role_arn":
			role = &ms[i]
		case "destination.external_id":
			ext = &ms[i]
		}
	}
	quoted := []byte(strconv.Quote(externalID))
	switch {
	case ext != nil && orig[ext.start] != '"':
		return nil, errors.New("destination.external_id is not a string")
	case ext != nil:
		return slices.Concat(orig[:ext.start], quoted, orig[ext.end:]), nil
	case role == nil:
		return nil, errors.New("no destination.role_arn in the file")
	}
	sep := ", "
	if nl := bytes.LastIndexByte(orig[:role.at], '\n'); nl >= 0 {
		if indent := orig[nl+1 : role.at]; len(bytes.TrimLeft(indent, " \t")) == 0 {
			sep = ",\n" + string(indent)
		}
	}
	return slices.Concat(orig[:role.end], []byte(sep+`"external_id": `), quoted, orig[role.end:]), nil
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
