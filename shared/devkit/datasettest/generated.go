package datasettest

import (
	"fmt"
	"strings"
)

// GeneratedCatalog is a catalog file (YAML) of n datasets, each a dozen
// lines with generated queries (tenant_column), cycling through the three
// partition semantics: the "a catalog of 50 datasets works" fixture.
func GeneratedCatalog(n int) []byte {
	var b strings.Builder
	b.WriteString("datasets:\n")
	for i := range n {
		part, col, typ := "event_time", "created_at", "timestamp"
		switch i % 3 {
		case 1:
			part, col, typ = "stat_date", "stat_date", "date"
		case 2:
			part = "activity"
		}
		fmt.Fprintf(&b, "  - name: table_%02d\n    version: 1\n    partition: %s\n    partition_column: %s\n    relation: app.table_%02d\n", i, part, col, i)
		b.WriteString("    mode: incremental_append\n    read: union_all_partitions\n    tenant_column: tenant_id\n    changed_column: updated_at\n")
		if part == "activity" {
			b.WriteString("    id_column: id\n    order_column: created_at\n")
		}
		fmt.Fprintf(&b, "    columns:\n      - {name: id, type: string, dictionary: false}\n      - {name: %s, type: %s}\n", col, typ)
		b.WriteString("      - {name: amount, type: \"decimal(18,2)\", nullable: true}\n      - {name: attributes, type: json, nullable: true}\n")
	}
	return []byte(b.String())
}
