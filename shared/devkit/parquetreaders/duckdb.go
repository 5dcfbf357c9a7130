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
	rows, err := db.Query(`SELECT name, type, type_length, repetition_type, logical_type, converted_type, precision, scale, num_children
		FROM parquet_schema(` + lit + `)`)
	if err != nil {
		return nil, fmt.Errorf("duckdb: parquet_schema %s: %w", path, err)
	}
	var elems []duckElement
	for rows.Next() {
		var e duckElement
		var phys, rep, logical, converted sql.NullString
		var length, precision, scale, children sql.NullInt64
		if err := rows.Scan(&e.name, &phys, &length, &rep, &logical, &converted, &precision, &scale, &children); err != nil {
			rows.Close()
			return nil, fmt.Errorf("duckdb: parquet_schema %s: %w", path, err)
		}
		e.rep, e.children, e.converted = rep.String, int(children.Int64), converted.String
		e.col = Column{Name: e.name, Physical: phys.String, Repetition: rep.String, Logical: duckLogical(logical.String, precision.Int64, scale.Int64)}
		if phys.String == "FIXED_LEN_BYTE_ARRAY" {
			e.col.Physical += "(" + strconv.FormatInt(length.Int64, 10) + ")"
		}
		elems = append(elems, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if out.Columns, err = duckColumns(elems); err != nil {
		return nil, fmt.Errorf("duckdb: parquet_schema %s: %w", path, err)
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
		if elem, ok := strings.CutSuffix(typ, "[]"); ok {
			exprs[i] = "list_transform(" + q + ", x -> " + duckExpr("x", elem) + ")"
			continue
		}
		exprs[i] = duckExpr(q, typ)
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
			if l, ok := v.([]any); ok {
				elems := make([]Value, len(l))
				for j, e := range l {
					if elems[j], err = duckValue(e); err != nil {
						return nil, fmt.Errorf("duckdb: %s column %s element %d: %w", path, out.Columns[i].Name, j, err)
					}
				}
				row[i] = ListText(elems)
				continue
			}
			if row[i], err = duckValue(v); err != nil {
				return nil, fmt.Errorf("duckdb: %s column %s: %w", path, out.Columns[i].Name, err)
			}
		}
		out.Rows = append(out.Rows, row)
	}
	return out, vals.Err()
}

// duckElement is one row of parquet_schema(): a schema element.
type duckElement struct {
	name, rep, converted string
	children             int
	col                  Column // as a leaf
}

// duckColumns describes the top-level columns of a schema given as its
// elements in order, the root first: a leaf as it is, a three-level LIST by
// its group (see the package comment).
func duckColumns(elems []duckElement) ([]Column, error) {
	if len(elems) == 0 {
		return nil, fmt.Errorf("no schema")
	}
	var out []Column
	for i := 1; i < len(elems); {
		e := elems[i]
		if e.children == 0 {
			out = append(out, e.col)
			i++
			continue
		}
		col := Column{Name: e.name, Repetition: e.rep}
		list := e.col.Logical == "LIST" || e.col.Logical == "" && e.converted == "LIST"
		if i+2 >= len(elems) || !list || e.children != 1 || elems[i+1].rep != "REPEATED" || elems[i+1].children != 1 || elems[i+2].children != 0 {
			return nil, fmt.Errorf("column %s: a group other than a three-level LIST", e.name)
		}
		leaf := elems[i+2].col
		col.Physical, col.Logical = leaf.Physical, ListLogical(leaf)
		out = append(out, col)
		i += 3
	}
	return out, nil
}

// duckExpr selects q, of DuckDB type typ, as canonical text (a double as
// float64).
func duckExpr(q, typ string) string {
	switch {
	case typ == "DATE":
		return "CAST(" + q + " - DATE '1970-01-01' AS VARCHAR)"
	case strings.HasPrefix(typ, "TIMESTAMP"):
		return "CAST(epoch_us(" + q + ") AS VARCHAR)"
	case typ == "DOUBLE":
		return q
	case typ == "BLOB":
		return "lower(hex(" + q + "))"
	}
	// integers, decimals, booleans, VARCHAR, JSON: DuckDB's text is canonical
	return "CAST(" + q + " AS VARCHAR)"
}

func duckValue(v any) (Value, error) {
	switch x := v.(type) {
	case nil:
		return Null, nil
	case float64:
		return Text(FormatDouble(x)), nil
	case string:
		return Text(x), nil
	}
	return Null, fmt.Errorf("unexpected %T", v)
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
	case strings.HasPrefix(lt, "ListType"):
		return "LIST" // of a group
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
