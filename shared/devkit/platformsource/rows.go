package platformsource

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// Row is one invoices row: In is what is inserted (SQL text, nil for NULL,
// in table order after org_id), Want what the delivered files must hold
// (the dataset value model, in the order catalog init declares the
// columns: the table's, without org_id).
type Row struct {
	In, Want []any
}

// InvoiceColumns are the invoices columns Insert fills, in table order.
const InvoiceColumns = "org_id, invoice_id, created_at, amount, currency, tier, client_ip, network, labels, line_count, quantity, weight, paid, due_on, note, paid_at, attributes"

// Invoices are the rows of the UTC day, in created_at order, with the
// awkward values of every type (extremes of numeric(20,10), int4 and int2,
// a float4, a far date, quotes, NULLs and an empty array, nested jsonb),
// and two rows just outside the day (its last microsecond before, the next
// day's first instant). created_at is the Zone wall-clock time of an
// instant inside the day, so the rows are the day's whatever its offset.
func Invoices(day civil.Date) (rows []Row, outside [][]any, err error) {
	loc, err := time.LoadLocation(Zone)
	if err != nil {
		return nil, nil, err
	}
	start := day.Start(time.UTC)
	wall := func(d time.Duration) string { return start.Add(d).In(loc).Format("2006-01-02 15:04:05.999999") }
	at := func(d time.Duration) time.Time { return start.Add(d) }
	var bad error
	dec := func(s string) dataset.Decimal {
		d, err := dataset.ParseDecimal(s, 10)
		if err != nil && bad == nil {
			bad = err
		}
		return d
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	first, mid, last := time.Duration(0), 13*time.Hour+30*time.Minute+500*time.Millisecond, 24*time.Hour-time.Microsecond
	paidAt := start.Add(12*time.Hour + 34*time.Minute + 56*time.Second + 789012*time.Microsecond)
	rows = []Row{
		{
			In: []any{"0B9C1F4E-5A3D-4C2B-9E8F-7A6B5C4D3E2F", wall(first), "1234567890.0123456789", "EUR", "enterprise",
				"192.168.0.1", "10.0.0.0/8", `{a,"b c","quote\"d",NULL}`, "2147483647", "32767", "0.1", "true", "9999-12-31",
				"Grüße 👋 \"q\"", paidAt.Format("2006-01-02 15:04:05.999999") + "+00", `{"vip": true, "plan": {"seats": [1, 2.5, "x"]}}`},
			Want: []any{"0b9c1f4e-5a3d-4c2b-9e8f-7a6b5c4d3e2f", at(first), dec("1234567890.0123456789"), "EUR", "enterprise",
				"192.168.0.1", "10.0.0.0/8", raw(`["a","b c","quote\"d",null]`), int64(2147483647), int64(32767), float64(float32(0.1)), true,
				civil.MustParse("9999-12-31"), "Grüße 👋 \"q\"", paidAt, raw(`{"vip": true, "plan": {"seats": [1, 2.5, "x"]}}`)},
		},
		{
			In: []any{"00000000-0000-0000-0000-000000000001", wall(mid), "-9999999999.9999999999", "US", "free",
				"2001:db8::1/64", nil, "{}", "-2147483648", nil, nil, "false", nil, nil, nil, nil},
			Want: []any{"00000000-0000-0000-0000-000000000001", at(mid), dec("-9999999999.9999999999"), "US ", "free",
				"2001:db8::1/64", nil, raw(`[]`), int64(-2147483648), nil, nil, false, nil, nil, nil, nil},
		},
		{
			In: []any{"ffffffff-ffff-ffff-ffff-ffffffffffff", wall(last), "0.0000000001", "JPY", "team",
				nil, nil, nil, "0", "-1", "-3.4e+38", "true", "2026-03-31", "tab\there", nil, `[]`},
			Want: []any{"ffffffff-ffff-ffff-ffff-ffffffffffff", at(last), dec("0.0000000001"), "JPY", "team",
				nil, nil, nil, int64(0), int64(-1), float64(float32(-3.4e38)), true, civil.MustParse("2026-03-31"), "tab\there", nil, raw(`[]`)},
		},
	}
	for i, d := range []time.Duration{-time.Microsecond, 24 * time.Hour} {
		outside = append(outside, []any{fmt.Sprintf("11111111-1111-1111-1111-11111111111%d", i), wall(d), "1", "EUR", "free",
			nil, nil, nil, "1", nil, nil, "false", nil, nil, nil, nil})
	}
	return rows, outside, bad
}

// Insert adds invoices rows (Row.In, or an outside row) for the tenant org.
func Insert(ctx context.Context, db *sql.DB, org any, rows ...[]any) error {
	for i, r := range rows {
		args := append([]any{org}, r...)
		if _, err := db.ExecContext(ctx, "INSERT INTO invoices ("+InvoiceColumns+") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)", args...); err != nil {
			return fmt.Errorf("insert invoice %d: %w", i, err)
		}
	}
	return nil
}
