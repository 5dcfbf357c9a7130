package loadsql

import (
	"fmt"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// ColumnType returns the column type a load script of engine declares for
// a column of type t (the table of docs/types.md).
func ColumnType(engine string, t dataset.Type) (string, error) {
	switch engine {
	case EngineAthena:
		return athenaType(t), nil
	case EngineBigQuery:
		return bigqueryType(t), nil
	case EngineSnowflake:
		return snowflakeType(t), nil
	case EngineRedshift:
		return redshiftType(t), nil
	case EngineDuckDB:
		return duckdbType(t), nil
	}
	return "", fmt.Errorf("%w: engine %q", ErrInvalid, engine)
}
