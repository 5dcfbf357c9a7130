package parquetreaders

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// ReadDuckDB decodes the file at path with DuckDB's Parquet reader: types
// from parquet_schema() and DESCRIBE, values with read_parquet(). db is a
// DuckDB connection (duckcheck.Open).
func ReadDuckDB(db *sql.DB, path string) (*Table, error) {
	lit := "'" + strings.ReplaceAll(path, "'", "''") + "'"
	out := &Table{Reader: "duckdb"}
	rows, err := db.Query(`SELECT name, type, type_length, repetition_type, logical_type, precision, scale
		FROM parquet_schema(` + lit + `) WHERE num_children IS NULL ORDER BY column_id`)
	if err != nil {
		return nil, fmt.Errorf("duckdb: parquet_schema %s: %w", path, err)
	}
	for rows.Next() {
		var name, phys, rep string
		var length, precision, scale sql.NullInt64
		var logical sql.NullString
		if err := rows.Scan(&name, &phys, &length, &rep, &logical, &precision, &scale); err != nil {
			rows.Close()
			return nil, fmt.Errorf("duckdb: parquet_schema %s: %w", path, err)
		}
		col := Column{Name: name, Physical: phys, Repetition: rep, Logical: duckLogical(logical.String, precision.Int64, scale.Int64)}
		if phys == "FIXED_LEN_BYTE_ARRAY" {
			col.Physical += "(" + strconv.FormatInt(length.Int64, 10) + ")"
		}
		out.Columns = append(out.Columns, col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	from := "read_parquet(" + lit + ")"
	desc, err := db.Query("DESCRIBE SELECT * FROM " + from)
	if err != nil {
		return nil, fmt.Errorf("duckdb: describe %s: %w", path, err)
	}
	var engines []string
	for desc.Next() {
		var name, typ string
		var a, b, c, d sql.NullString
		if err := desc.Scan(&name, &typ, &a, &b, &c, &d); err != nil {
			desc.Close()
			return nil, err
		}
		engines = append(engines, typ)
	}
	desc.Close()
	if len(engines) != len(out.Columns) {
		return nil, fmt.Errorf("duckdb: %s: %d columns in the schema, %d described", path, len(out.Columns), len(engines))
	}
	exprs := make([]string, len(engines))
	for i, typ := range engines {
		out.Columns[i].Engine = typ
		q := `"` + strings.ReplaceAll(out.Columns[i].Name, `"`, `""`) + `"`
		switch {
		case typ == "DATE":
			exprs[i] = "CAST(" + q + " - DATE '1970-01-01' AS VARCHAR)"
		case strings.HasPrefix(typ, "TIMESTAMP"):
			exprs[i] = "CAST(epoch_us(" + q + ") AS VARCHAR)"
		case typ == "DOUBLE":
			exprs[i] = q
		case typ == "BLOB":
			exprs[i] = "lower(hex(" + q + "))"
		default: // integers, decimals, booleans, VARCHAR, JSON: DuckDB's text is canonical
			exprs[i] = "CAST(" + q + " AS VARCHAR)"
		}
	}
	vals, err := db.Query("SELECT " + strings.Join(exprs, ", ") + " FROM " + from)
	if err != nil {
		return nil, fmt.Errorf("duckdb: read %s: %w", path, err)
	}
	defer vals.Close()
	for vals.Next() {
		raw := make([]any, len(exprs))
		ptrs := make([]any, len(exprs))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := vals.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("duckdb: read %s: %w", path, err)
		}
		row := make([]Value, len(raw))
		for i, v := range raw {
			switch x := v.(type) {
			case nil:
				row[i] = Null
			case float64:
				row[i] = Text(FormatDouble(x))
			case string:
				row[i] = Text(x)
			default:
				return nil, fmt.Errorf("duckdb: %s column %s: unexpected %T", path, out.Columns[i].Name, v)
			}
		}
		out.Rows = append(out.Rows, row)
	}
	return out, vals.Err()
}

// duckLogical maps parquet_schema()'s logical_type text, e.g.
// "DecimalType(scale=2, precision=18)", to the canonical name.
func duckLogical(lt string, precision, scale int64) string {
	switch {
	case lt == "":
		return ""
	case strings.HasPrefix(lt, "StringType"):
		return "STRING"
	case strings.HasPrefix(lt, "JsonType"):
		return "JSON"
	case strings.HasPrefix(lt, "DateType"):
		return "DATE"
	case strings.HasPrefix(lt, "IntType("):
		// e.g. "IntType(bitWidth=@, isSigned=1)": DuckDB prints the bit width
		// as a character ('@' is 64).
		_, w, _ := strings.Cut(lt, "bitWidth=")
		if w == "" {
			break
		}
		bits := int(w[0])
		if n, err := strconv.Atoi(strings.SplitN(w, ",", 2)[0]); err == nil {
			bits = n
		}
		return integerName(bits, strings.Contains(lt, "isSigned=1"))
	case strings.HasPrefix(lt, "DecimalType"):
		return fmt.Sprintf("DECIMAL(%d,%d)", precision, scale)
	case strings.HasPrefix(lt, "TimestampType"):
		zone := "LOCAL"
		if strings.Contains(lt, "isAdjustedToUTC=1") {
			zone = "UTC"
		}
		for _, u := range []string{"MILLIS", "MICROS", "NANOS"} {
			if !strings.Contains(lt, u+"=<null>") && strings.Contains(lt, u+"=") {
				return "TIMESTAMP(" + u + "," + zone + ")"
			}
		}
	}
	return "other:" + lt
}
