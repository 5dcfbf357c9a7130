package civil

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestEpochDaysRoundTrip(t *testing.T) {
	t.Parallel()
	// Every day from 1600 to 2400 against the standard library's calendar.
	start := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 800*366; i++ {
		tm := start.AddDate(0, 0, i)
		d := Of(tm)
		want := int32(tm.Unix() / 86400)
		if tm.Unix() < 0 && tm.Unix()%86400 != 0 {
			want--
		}
		if got := d.EpochDays(); got != want {
			t.Fatalf("%s.EpochDays() = %d, want %d", d, got, want)
		}
		if back := FromEpochDays(want); back != d {
			t.Fatalf("FromEpochDays(%d) = %s, want %s", want, back, d)
		}
	}
}

func TestParseAndText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Date
		wantErr bool
	}{
		{"2026-11-28", Date{2026, time.November, 28}, false},
		{"1969-12-31", Date{1969, time.December, 31}, false},
		{"2026-02-30", Date{}, true},
		{"2026-1-02", Date{}, true},
		{"", Date{}, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	b, _ := json.Marshal(struct{ D Date }{MustParse("2026-11-28")})
	if string(b) != `{"D":"2026-11-28"}` {
		t.Errorf("json = %s", b)
	}
	var v struct{ D Date }
	if err := json.Unmarshal([]byte(`{"D":""}`), &v); err != nil || !v.D.IsZero() {
		t.Errorf("empty = %v, %v", v.D, err)
	}
}

func TestArithmetic(t *testing.T) {
	t.Parallel()
	d := MustParse("2024-02-28")
	if got := d.AddDays(1).String(); got != "2024-02-29" {
		t.Errorf("leap day: %s", got)
	}
	if got := d.AddDays(2).String(); got != "2024-03-01" {
		t.Errorf("after leap day: %s", got)
	}
	if n := d.DaysUntil(MustParse("2025-02-28")); n != 366 {
		t.Errorf("DaysUntil = %d", n)
	}
	if r := Range(d, d.AddDays(3)); len(r) != 4 || r[3] != MustParse("2024-03-02") {
		t.Errorf("Range = %v", r)
	}
	if Range(d.AddDays(1), d) != nil {
		t.Error("empty range not nil")
	}
	if !d.Before(d.AddDays(1)) || !d.AddDays(1).After(d) || d.Compare(d) != 0 {
		t.Error("ordering")
	}
}
func TestDayFromLayout(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"2026-02-30", "2026-1-01", "20260101", "", "2026-01-01T00:00:00Z"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("Parse(%q) error %v does not name the value", bad, err)
		}
	}
	d := MustParse("2024-02-28")
	if d.AddDays(1).String() != "2024-02-29" || d.AddDays(2).String() != "2024-03-01" || d.AddDays(-59).String() != "2023-12-31" {
		t.Error("AddDays across a leap day / year")
	}
	if n := MustParse("2026-01-01").DaysUntil(MustParse("2026-03-31")); n != 89 {
		t.Errorf("DaysUntil = %d", n)
	}
	if r := Range(MustParse("2026-03-07"), MustParse("2026-03-09")); len(r) != 3 || r[2].String() != "2026-03-09" {
		t.Errorf("Range = %v", r)
	}
	if Range(MustParse("2026-03-09"), MustParse("2026-03-07")) != nil {
		t.Error("reversed range not empty")
	}
	b, _ := d.MarshalText()
	var back Date
	if err := back.UnmarshalText(b); err != nil || back != d {
		t.Errorf("text round trip %v %v", back, err)
	}
	kol, _ := time.LoadLocation("Asia/Kolkata")
	if got := In(time.Date(2026, 3, 10, 19, 0, 0, 0, time.UTC), kol).String(); got != "2026-03-11" {
		t.Errorf("In = %s", got)
	}
}

func TestEpochDaysKnown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		days int32
	}{{"1970-01-01", 0}, {"2026-11-28", 20785}, {"1969-12-31", -1}, {"2000-02-29", 11016}}
	for _, tt := range tests {
		d := MustParse(tt.s)
		if d.EpochDays() != tt.days || FromEpochDays(tt.days) != d || string(d.AppendText(nil)) != tt.s {
			t.Errorf("%s: EpochDays %d, want %d; AppendText %q", tt.s, d.EpochDays(), tt.days, d.AppendText(nil))
		}
	}
	// Of uses the instant's own calendar day, not UTC's.
	tokyo := time.FixedZone("JST", 9*3600)
	if got := Of(time.Date(2026, 11, 28, 1, 0, 0, 0, tokyo)).String(); got != "2026-11-28" {
		t.Fatalf("Of = %s", got)
	}
}
