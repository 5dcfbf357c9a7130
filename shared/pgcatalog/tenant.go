package pgcatalog

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// TenantType is the catalog's tenant_type for a tenant column of type t:
// text-like columns hold the account id (or a string tenant key), uuid and
// integer columns a tenant key of that type. Other types (a numeric, a
// timestamp, an array) cannot be bound from a key and are refused.
func TenantType(t SourceType) (string, error) {
	if t.IsArray() {
		return "", fmt.Errorf("%s: an array cannot identify a tenant", t.Display)
	}
	switch t.Name {
	case "text", "varchar", "bpchar", "name", "citext":
		return dataset.TenantString, nil
	case "uuid":
		return dataset.TenantUUID, nil
	case "int2", "int4", "int8":
		return dataset.TenantInt64, nil
	}
	return "", fmt.Errorf("%s: a tenant column must be text, varchar, uuid or an integer", t.Display)
}

// TenantParam prepares query on conn (a connection of the pgx driver) and
// returns the type PostgreSQL infers for its first parameter, the tenant:
// the tenant column's type, whether the query is generated or written by
// hand.
func TenantParam(ctx context.Context, conn *sql.Conn, query string) (SourceType, error) {
	var st SourceType
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection of driver %T, want pgx", dc)
		}
		sd, err := c.Conn().PgConn().Prepare(ctx, "", query, nil)
		if err != nil {
			return err
		}
		if len(sd.ParamOIDs) == 0 {
			return errors.New("the query binds no tenant ($1)")
		}
		return c.Conn().QueryRow(ctx, "SELECT typname, format_type(oid, NULL) FROM pg_type WHERE oid = $1", sd.ParamOIDs[0]).Scan(&st.Name, &st.Display)
	})
	if err != nil {
		return SourceType{}, fmt.Errorf("tenant parameter: %w", err)
	}
	return st, nil
}

// checkTenant compares the dataset's declared tenant_type with the type
// of its query's tenant parameter.
func checkTenant(ctx context.Context, conn *sql.Conn, add func(sev Severity, check, col, declared, found, format string, args ...any), d dataset.Dataset, query string) {
	col := cmp.Or(d.TenantColumn, "$1")
	t, err := TenantParam(ctx, conn, query)
	if err != nil {
		add(SeverityError, "tenant", col, "tenant_type "+d.TenantKind(), "", "%v", err)
		return
	}
	found, err := TenantType(t)
	if err != nil {
		add(SeverityError, "tenant", col, "tenant_type "+d.TenantKind(), t.Display, "%v", err)
		return
	}
	if found != d.TenantKind() {
		add(SeverityError, "tenant", col, "tenant_type "+d.TenantKind(), t.Display,
			"the tenant is bound as %s: declare tenant_type: %s, and give each account its key there as tenant_key", t.Display, found)
	}
}
