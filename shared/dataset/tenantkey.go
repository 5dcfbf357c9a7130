package dataset

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Tenant key types: what a dataset's tenant column holds, so the value an
// account binds to it (account.Account.TenantKey, else the account id) is
// checked when the account is saved, and bound as that type.
const (
	TenantString = "string" // text, varchar: the default
	TenantUUID   = "uuid"
	TenantInt64  = "int64" // int2, int4, int8
)

// TenantTypes are the valid tenant_type values.
var TenantTypes = []string{TenantString, TenantUUID, TenantInt64}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Tenant keys are JSON strings in an account file whatever the column's
// type ("tenant_key": "42"), and one tenant has one key: a key is canonical
// when it is written as its tenant type writes it (CanonicalTenantKey):
// an integer in decimal without a plus sign or leading zeros ("42", "-42";
// not "042" or "+42"), a uuid in lower case with its hyphens, a string as it
// is. Accounts are saved with canonical keys only (account.Validate refuses
// any other, naming both forms); a key stored before that rule binds what
// its canonical form binds (TenantValue), and accounts are compared and
// guarded by TenantIdentity, so "0007" and "7" are one tenant either way.

// TenantKind is the dataset's tenant type, TenantString when it declares
// none.
func (d Dataset) TenantKind() string {
	if d.TenantType == "" {
		return TenantString
	}
	return d.TenantType
}

// TenantValue checks key against the dataset's tenant type and returns the
// value a query binds for it, canonical: the text for string, the lower-case
// text for uuid (a source without a uuid type, SQLite, holds it as that
// text), an int64 for int64. A key that is not canonical binds the value of
// its canonical form.
func (d Dataset) TenantValue(key string) (any, error) {
	col := "tenant column"
	if d.TenantColumn != "" {
		col += " " + d.TenantColumn
	}
	switch d.TenantKind() {
	case TenantUUID:
		if !uuidRE.MatchString(key) {
			return nil, fmt.Errorf("dataset %s reads a uuid %s: %q is not a uuid", d.Name, col, key)
		}
		return strings.ToLower(key), nil
	case TenantInt64:
		n, err := strconv.ParseInt(key, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("dataset %s reads an integer %s: %q is not a 64-bit integer", d.Name, col, key)
		}
		return n, nil
	}
	return key, nil
}

// CanonicalTenantKey returns key as the dataset's tenant type writes it
// (the text of TenantValue's value), or TenantValue's error.
func (d Dataset) CanonicalTenantKey(key string) (string, error) {
	v, err := d.TenantValue(key)
	if err != nil {
		return "", err
	}
	if n, ok := v.(int64); ok {
		return strconv.FormatInt(n, 10), nil
	}
	return v.(string), nil
}

// TenantIdentity is what two accounts' tenant keys are compared by, and
// guarded by, whatever their datasets' tenant types: a key that reads as a
// 64-bit integer is that integer in canonical form, a uuid is in lower
// case, any other key is itself. Two keys with one identity bind one
// tenant's rows wherever an integer or uuid column reads them; where a
// text column reads them they are distinct tenants, and the second account
// is refused all the same (one rule, whatever the catalog).
func TenantIdentity(key string) string {
	if n, err := strconv.ParseInt(key, 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	if uuidRE.MatchString(key) {
		return strings.ToLower(key)
	}
	return key
}

// ParamText is the text of a query parameter (the values source.Query.Params
// binds: a string, an int64 or a time.Time), as a PostgreSQL server parses
// a parameter sent as text into the type it inferred for it: an integer
// tenant key binds a bigint, integer or smallint column alike. The
// exporter's binary read path and `catalog check`'s probe both bind
// through it, so the check binds what the export binds.
func ParamText(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case int64:
		return strconv.AppendInt(nil, x, 10), nil
	case time.Time:
		return []byte(FormatTimestamp(x)), nil
	}
	return nil, fmt.Errorf("a value of type %T cannot be bound", v)
}

func (d Dataset) validateTenantType() error {
	switch d.TenantType {
	case "", TenantString, TenantUUID, TenantInt64:
		return nil
	}
	return fmt.Errorf("dataset %s: tenant_type %q: want %s, %s or %s", d.Name, d.TenantType, TenantString, TenantUUID, TenantInt64)
}
