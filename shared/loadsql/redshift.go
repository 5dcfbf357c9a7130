package loadsql

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// redshiftType maps a column type to Redshift. Strings are VARCHAR(65535),
// the widest Redshift has (65535 bytes of UTF-8); JSON is SUPER. A longer
// string fails the COPY (no TRUNCATECOLUMNS, so nothing is cut silently),
// and the header says so (redshiftLimits).
// https://docs.aws.amazon.com/redshift/latest/dg/c_Supported_data_types.html
// https://docs.aws.amazon.com/redshift/latest/dg/copy-parameters-data-conversion.html#copy-truncatecolumns
func redshiftType(t dataset.Type) string {
	switch t.Kind {
	case dataset.KindDate:
		return "DATE"
	case dataset.KindTimestamp:
		return "TIMESTAMPTZ"
	case dataset.KindInt64:
		return "BIGINT"
	case dataset.KindDouble:
		return "DOUBLE PRECISION"
	case dataset.KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case dataset.KindBoolean:
		return "BOOLEAN"
	case dataset.KindJSON:
		return "SUPER"
	case dataset.KindBinary:
		return "VARBYTE(8388608)" // dataset.MaxBinaryBytes
	case dataset.KindList:
		return "SUPER"
	default:
		return "VARCHAR(65535)"
	}
}

// redshiftStageType is the type of a column in the staging table COPY
// writes. COPY from Parquet maps columns by position and cannot parse a JSON
// string into SUPER, so a Parquet JSON column lands as VARCHAR and is parsed
// with JSON_PARSE on insert. From NDJSON, JSON 'auto' loads the object
// straight into SUPER.
func (g *gen) redshiftStageType(t dataset.Type) string {
	if t.Kind == dataset.KindJSON && g.p.Format == fileformat.Parquet {
		return "VARCHAR(65535)"
	}
	if g.ndjsonBinary(t) {
		return redshiftBinaryStage
	}
	return redshiftType(t)
}

// redshift: COPY into a temporary staging table from a COPY manifest naming
// exactly the manifest's files, then DELETE the day and INSERT ... SELECT
// with the day literal, all in one transaction.
//
// Why a manifest: COPY FROM 's3://prefix' loads every object under the
// prefix (stale parts, _manifest.json, scripts); a COPY manifest lists exact
// URLs, and for Parquet each entry must carry meta.content_length.
// Why staging: COPY from Parquet maps file columns to table columns by
// position and the counts must match, so it cannot fill dt, which is not in
// the file; the staging table is exactly the file's columns.
//
//	COPY:             https://docs.aws.amazon.com/redshift/latest/dg/r_COPY.html
//	Manifest:         https://docs.aws.amazon.com/redshift/latest/dg/loading-data-files-using-manifest.html
//	Columnar COPY:    https://docs.aws.amazon.com/redshift/latest/dg/copy-usage_notes-copy-from-columnar.html
//	SUPER / JSON:     https://docs.aws.amazon.com/redshift/latest/dg/copy_json.html
//	JSON_PARSE:       https://docs.aws.amazon.com/redshift/latest/dg/JSON_PARSE.html
func (g *gen) redshift() string {
	var b strings.Builder
	manifest := g.uri(RedshiftManifestKey(g.p))
	lines := append(g.snapshotHeader(),
		"REPLACE "+RedshiftIAMRole+" with a role Redshift can assume to read the bucket.",
		"COPY reads the COPY manifest _load/"+RedshiftManifestName+" beside this script, which",
		"lists exactly the data files above (never a prefix, which would load stale files).",
	)
	lines = append(lines, g.redshiftLimits()...)
	lines = append(lines,
		"Docs: https://docs.aws.amazon.com/redshift/latest/dg/r_COPY.html",
		"      https://docs.aws.amazon.com/redshift/latest/dg/loading-data-files-using-manifest.html",
	)
	b.WriteString(g.header(lines...))
	q := quoteDouble
	table := quoteTable(q, g.table)
	stage := q(g.table[len(g.table)-1] + "_daybook_stage")
	cols := g.ds.Columns
	dayLit := literal(EngineRedshift, g.day) + "::DATE"

	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn) + " DATE NOT NULL"
		}
		return q(cols[i].Name) + " " + redshiftType(cols[i].Type) + notNull(cols[i])
	})
	b.WriteString(");\n\n")
	g.redshiftEvolution(&b)

	b.WriteString("BEGIN;\n\n")
	b.WriteString("-- Staging table: exactly the file's columns, in file order.\n")
	fmt.Fprintf(&b, "CREATE TEMP TABLE %s (\n", stage)
	columnList(&b, "    ", len(cols), func(i int) string {
		return q(cols[i].Name) + " " + g.redshiftStageType(cols[i].Type)
	})
	b.WriteString(");\n\n")
	fmt.Fprintf(&b, "COPY %s\n", stage)
	fmt.Fprintf(&b, "FROM %s\n", literal(EngineRedshift, manifest))
	fmt.Fprintf(&b, "IAM_ROLE %s\n", literal(EngineRedshift, RedshiftIAMRole))
	if g.p.Format == fileformat.Parquet {
		b.WriteString("FORMAT AS PARQUET\n")
		b.WriteString(g.redshiftParquetLists())
	} else {
		b.WriteString("FORMAT AS JSON 'auto'\n")
		b.WriteString("GZIP\n")
		b.WriteString("TIMEFORMAT 'auto'\n")
	}
	b.WriteString("MANIFEST;\n\n")

	fmt.Fprintf(&b, "DELETE FROM %s WHERE %s = %s;\n\n", table, q(dtColumn), dayLit)
	fmt.Fprintf(&b, "INSERT INTO %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn)
		}
		return q(cols[i].Name)
	})
	b.WriteString(")\nSELECT\n")
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return dayLit
		}
		c := cols[i]
		if c.Type.Kind == dataset.KindJSON && g.p.Format == fileformat.Parquet {
			return "JSON_PARSE(" + q(c.Name) + ")"
		}
		if g.ndjsonBinary(c.Type) {
			return "TO_VARBYTE(" + q(c.Name) + ", 'base64')"
		}
		return q(c.Name)
	})
	fmt.Fprintf(&b, "FROM %s;\n\n", stage)
	fmt.Fprintf(&b, "DROP TABLE %s;\n\n", stage)
	if g.ds.IsSnapshot() {
		g.snapshotPrune(&b, q, table)
		b.WriteString("\n")
	}
	b.WriteString("COMMIT;\n")
	g.currentStateComment(&b)
	return b.String()
}

// RedshiftCopyManifest returns the Redshift COPY manifest of p: one entry per
// data file of the manifest, `mandatory` so a missing file fails the COPY
// instead of loading a partial day, with `meta.content_length` (required for
// Parquet). The exporter writes it as `_load/redshift.manifest`
// (RedshiftManifestKey) beside `_load/redshift.sql`, which names it.
// https://docs.aws.amazon.com/redshift/latest/dg/loading-data-files-using-manifest.html
func RedshiftCopyManifest(p Partition) ([]byte, error) {
	g, err := newGen(EngineRedshift, p)
	if err != nil {
		return nil, err
	}
	type meta struct {
		ContentLength int64 `json:"content_length"`
	}
	type entry struct {
		URL       string `json:"url"`
		Mandatory bool   `json:"mandatory"`
		Meta      meta   `json:"meta"`
	}
	doc := struct {
		Entries []entry `json:"entries"`
	}{}
	for _, f := range p.Files {
		doc.Entries = append(doc.Entries, entry{URL: g.uri(f.Key), Mandatory: true, Meta: meta{ContentLength: f.Bytes}})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%w: redshift manifest: %v", ErrInvalid, err)
	}
	return append(b, '\n'), nil
}
