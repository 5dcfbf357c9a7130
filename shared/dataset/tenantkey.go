package dataset

import (
	"fmt"
	"regexp"
	"strconv"
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

// TenantKind is the dataset's tenant type, TenantString when it declares
// none.
func (d Dataset) TenantKind() string {
	if d.TenantType == "" {
		return TenantString
	}
	return d.TenantType
}

// TenantValue checks key against the dataset's tenant type and returns the
// value a query binds for it: the text for string and uuid, an int64 for
// int64.
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
		return key, nil
	case TenantInt64:
		n, err := strconv.ParseInt(key, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("dataset %s reads an integer %s: %q is not a 64-bit integer", d.Name, col, key)
		}
		return n, nil
	}
	return key, nil
}

func (d Dataset) validateTenantType() error {
	switch d.TenantType {
	case "", TenantString, TenantUUID, TenantInt64:
		return nil
	}
	return fmt.Errorf("dataset %s: tenant_type %q: want %s, %s or %s", d.Name, d.TenantType, TenantString, TenantUUID, TenantInt64)
}
