package dataset

// SliceBoundQuery is the query that finds a slice boundary of a day (E7;
// source.Slicer): the partition column's value at an offset into the rows
// of a window, bound as (account, start, end, offset). A dataset whose
// queries are generated (tenant_column) reads the partition column alone
// on the tenant and partition column index:
//
//	SELECT <partition_column> FROM <relation> WHERE <the export's filter>
//	ORDER BY <partition_column> LIMIT 1 OFFSET <offset>
//
// Any other wraps its declared export query, whose plan it follows.
func (d Dataset) SliceBoundQuery(dialect string) (string, error) {
	off := "?"
	if dialect == DialectPostgres {
		off = "$4"
	}
	col := quoteIdent(d.PartitionColumn)
	tail := " ORDER BY " + col + " LIMIT 1 OFFSET " + off
	q, err := d.Query(dialect)
	if err != nil {
		return "", err
	}
	if d.TenantColumn != "" {
		return "SELECT " + col + " FROM " + d.Relation + " WHERE " + d.where(dialect) + tail, nil
	}
	return "SELECT " + col + " FROM (" + q + ") AS daybook_slice" + tail, nil
}
