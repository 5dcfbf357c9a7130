package publicschemas

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// The value types of Row, besides nil, string (text, varchar, uuid, inet,
// enum labels), int64 (any integer), bool, float32 (real), time.Time (an
// instant: timestamp with time zone), civil.Date and []byte (bytea).
type (
	// Numeric is a numeric in PostgreSQL's text form, with exactly its
	// column's scale of fractional digits.
	Numeric string
	// Wall is a timestamp without time zone: its wall clock (in the
	// schema's SourceZone) is the value, its location is ignored.
	Wall time.Time
	// JSON is json or jsonb text.
	JSON string
	// TextArray is a text[]; a nil element is NULL.
	TextArray []*string
)

// Literal renders v as a PostgreSQL literal the column's type takes.
func Literal(v any) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return q(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case float32:
		return q(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case Numeric:
		return q(string(x))
	case time.Time:
		return q(x.UTC().Format("2006-01-02 15:04:05.999999Z07:00"))
	case Wall:
		return q(time.Time(x).Format("2006-01-02 15:04:05.999999"))
	case civil.Date:
		return q(x.String())
	case JSON:
		return q(string(x))
	case TextArray:
		elems := make([]string, len(x))
		for i, e := range x {
			if e == nil {
				elems[i] = "NULL"
				continue
			}
			elems[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(*e) + `"`
		}
		return q("{" + strings.Join(elems, ",") + "}")
	case []byte:
		return q(`\x` + hex.EncodeToString(x))
	}
	panic(fmt.Sprintf("publicschemas: no literal for %T", v))
}

// Want is the value the dataset value model gives v in a column of c's
// type, a wall-clock time read in zone (the schema's SourceZone): what a
// reader of the delivered files must find.
func Want(v any, c dataset.Column, zone *time.Location) any {
	switch x := v.(type) {
	case nil:
		return nil
	case float32:
		return float64(x)
	case Numeric:
		return string(x)
	case time.Time:
		return x.UTC()
	case Wall:
		w := time.Time(x)
		return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), zone).UTC()
	case JSON:
		return json.RawMessage(x)
	case TextArray:
		b, err := json.Marshal([]*string(x))
		if err != nil {
			panic(err)
		}
		return json.RawMessage(b)
	}
	return v
}

// Key is v as a tenant key (the account's tenant_key), for comparing a
// row's tenant column with an account's.
func Key(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	}
	panic(fmt.Sprintf("publicschemas: %T is no tenant key", v))
}

func ptr(s string) *string { return &s }
