// Package platformsource is a second source schema for tests, unlike the
// demo's: a multi-tenant PostgreSQL schema as a SaaS platform writes it
// (tenant column org_id; wall-clock timestamps without time zone
// in the platform's zone; numeric(20,10) money; an enum; inet and cidr;
// jsonb; a text[]; a daily snapshot table; a members dimension table
// delivered as a snapshot), and rows for it with every
// awkward value of those types.
package platformsource

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
)

// DDL creates the schema's types and tables on the search path.
//
//go:embed platform.sql
var DDL string

// Zone is the zone the platform's timestamp without time zone columns
// hold wall-clock times in.
const Zone = "Europe/Berlin"

// Create runs DDL on db.
func Create(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, DDL); err != nil {
		return fmt.Errorf("platform schema: %w", err)
	}
	return nil
}
