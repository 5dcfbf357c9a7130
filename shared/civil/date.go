// Package civil is the calendar day (YYYY-MM-DD, no time zone) that names a
// partition, a start date and a DATE column. It is the one spelling of a day
// for the ledger, the layout, accounts and the dataset value model.
package civil

import (
	"fmt"
	"time"
)

// Date is a civil date with no time zone. The zero Date is "no day" and
// renders as "".
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// Layout is the textual form of a Date, as in `dt=YYYY-MM-DD`.
const Layout = time.DateOnly

// Parse parses YYYY-MM-DD; the error names the value.
func Parse(s string) (Date, error) {
	t, err := time.Parse(Layout, s)
	if err != nil || len(s) != len(Layout) {
		return Date{}, fmt.Errorf("day %q: want YYYY-MM-DD", s)
	}
	return Of(t), nil
}

// MustParse is Parse for constants in tests and examples; it panics on error.
func MustParse(s string) Date {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Of returns the civil date of t in t's own location.
func Of(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// In returns the civil date of the instant t in loc.
func In(t time.Time, loc *time.Location) Date { return Of(t.In(loc)) }

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

// String renders YYYY-MM-DD ("" for the zero Date).
func (d Date) String() string {
	if d.IsZero() {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// AppendText appends YYYY-MM-DD to b without allocating (years 0-9999).
func (d Date) AppendText(b []byte) []byte {
	y, m, dd := d.Year, int(d.Month), d.Day
	return append(b, byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-', byte('0'+dd/10), byte('0'+dd%10))
}

// Start is midnight at the start of d in loc.
func (d Date) Start(loc *time.Location) time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
}

// AddDays returns d moved by n days (calendar arithmetic, no time zone).
func (d Date) AddDays(n int) Date { return FromEpochDays(d.EpochDays() + int32(n)) }

// Compare returns -1, 0 or +1.
func (d Date) Compare(o Date) int {
	switch {
	case d.Year != o.Year:
		return cmpInt(d.Year, o.Year)
	case d.Month != o.Month:
		return cmpInt(int(d.Month), int(o.Month))
	default:
		return cmpInt(d.Day, o.Day)
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Before reports whether d is earlier than o.
func (d Date) Before(o Date) bool { return d.Compare(o) < 0 }

// After reports whether d is later than o.
func (d Date) After(o Date) bool { return d.Compare(o) > 0 }

// DaysUntil returns the number of days from d to o (negative if o is earlier).
func (d Date) DaysUntil(o Date) int { return int(o.EpochDays() - d.EpochDays()) }

// Range returns every day from `from` through `to`, inclusive (nil if from is after to).
func Range(from, to Date) []Date {
	if from.After(to) {
		return nil
	}
	out := make([]Date, 0, from.DaysUntil(to)+1)
	for d := from; !d.After(to); d = d.AddDays(1) {
		out = append(out, d)
	}
	return out
}

// EpochDays is the number of days since 1970-01-01, the physical value of
// Parquet's DATE. It is pure integer arithmetic (proleptic Gregorian), cheap
// enough for an encoder's hot path.
func (d Date) EpochDays() int32 {
	// Howard Hinnant's days_from_civil.
	y, m := int64(d.Year), int64(d.Month)
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + int64(d.Day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int32(era*146097 + doe - 719468)
}

// FromEpochDays is the Date n days after 1970-01-01 (before it when negative).
func FromEpochDays(n int32) Date {
	// Howard Hinnant's civil_from_days.
	z := int64(n) + 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return Date{Year: int(y), Month: time.Month(m), Day: int(day)}
}

// MarshalText renders YYYY-MM-DD, so a Date is a JSON string.
func (d Date) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses YYYY-MM-DD; "" is the zero Date.
func (d *Date) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = Date{}
		return nil
	}
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
