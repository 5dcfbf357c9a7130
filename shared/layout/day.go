package layout

import (
	"fmt"
	"time"
)

// Day is a civil date (YYYY-MM-DD) with no time zone: the day of a partition.
// The zero Day is "no day" and renders as "".
type Day struct {
	Year  int
	Month time.Month
	Dom   int
}

// DayFormat is the textual form of a Day, as in `dt=YYYY-MM-DD`.
const DayFormat = "2006-01-02"

// ParseDay parses YYYY-MM-DD; the error names the value.
func ParseDay(s string) (Day, error) {
	t, err := time.Parse(DayFormat, s)
	if err != nil || len(s) != len(DayFormat) {
		return Day{}, fmt.Errorf("day %q: want YYYY-MM-DD", s)
	}
	return DayOf(t), nil
}

// MustDay is ParseDay for constants in tests and examples; it panics on error.
func MustDay(s string) Day {
	d, err := ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

// DayOf returns the civil date of t in t's own location.
func DayOf(t time.Time) Day {
	y, m, d := t.Date()
	return Day{Year: y, Month: m, Dom: d}
}

// DayIn returns the civil date of the instant t in loc.
func DayIn(t time.Time, loc *time.Location) Day { return DayOf(t.In(loc)) }

// IsZero reports whether d is the zero Day.
func (d Day) IsZero() bool { return d == Day{} }

// String renders YYYY-MM-DD ("" for the zero Day).
func (d Day) String() string {
	if d.IsZero() {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Dom)
}

// Start is midnight at the start of d in loc.
func (d Day) Start(loc *time.Location) time.Time {
	return time.Date(d.Year, d.Month, d.Dom, 0, 0, 0, 0, loc)
}

// AddDays returns d moved by n days (calendar arithmetic, no time zone).
func (d Day) AddDays(n int) Day { return DayOf(d.Start(time.UTC).AddDate(0, 0, n)) }

// Compare returns -1, 0 or +1.
func (d Day) Compare(o Day) int {
	switch {
	case d.Year != o.Year:
		return cmp(d.Year, o.Year)
	case d.Month != o.Month:
		return cmp(int(d.Month), int(o.Month))
	default:
		return cmp(d.Dom, o.Dom)
	}
}

func cmp(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Before reports whether d is earlier than o.
func (d Day) Before(o Day) bool { return d.Compare(o) < 0 }

// After reports whether d is later than o.
func (d Day) After(o Day) bool { return d.Compare(o) > 0 }

// DaysUntil returns the number of days from d to o (negative if o is earlier).
func (d Day) DaysUntil(o Day) int {
	return int(o.Start(time.UTC).Sub(d.Start(time.UTC)).Hours() / 24)
}

// Range returns every day from `from` through `to`, inclusive (nil if from is after to).
func Range(from, to Day) []Day {
	if from.After(to) {
		return nil
	}
	out := make([]Day, 0, from.DaysUntil(to)+1)
	for d := from; !d.After(to); d = d.AddDays(1) {
		out = append(out, d)
	}
	return out
}

// MarshalText renders YYYY-MM-DD, so a Day is a JSON string.
func (d Day) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses YYYY-MM-DD; "" is the zero Day.
func (d *Day) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = Day{}
		return nil
	}
	v, err := ParseDay(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
