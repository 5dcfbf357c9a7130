package account

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

func valid() Account {
	return Account{ID: "acct_abcdefghijklmnop", Name: "Acme", Enabled: true, StartDate: civil.MustParse("2026-01-01"),
		Datasets: []string{"events", "profiles"}, Destination: Destination{Bucket: "acme-exports"}}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	r := rand.NewChaCha8([32]byte{1})
	seen := map[string]bool{}
	for range 1000 {
		id, err := NewID(r)
		if err != nil {
			t.Fatal(err)
		}
		if !ValidID(id) || seen[id] {
			t.Fatalf("id %q invalid or repeated", id)
		}
		seen[id] = true
	}
	if _, err := NewID(bytes.NewReader(nil)); err == nil {
		t.Error("NewID from an empty reader")
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	in := `{"id":"acct_abcdefghijklmnop","name":"Acme","enabled":true,"start_date":"2026-01-01","time_zone":"Asia/Kolkata",
	"settle_delay":"90m","datasets":["events"],"destination":{"bucket":"acme-exports","prefix":"x/{{.AccountID}}","role_arn":"arn:aws:iam::123456789012:role/daybook-export-a",
	"external_id":"ext-1","expected_bucket_owner":"123456789012","format":"parquet","compression":"zstd"}}`
	var a Account
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := a.Validate(datasettest.Example(t), testRules); err != nil {
		t.Fatal(err)
	}
	if a.SettleDelay.D() != 90*time.Minute || a.StartDate.String() != "2026-01-01" || a.Destination.Compression != "zstd" {
		t.Errorf("decoded %+v", a)
	}
	var bad Account
	if err := json.Unmarshal([]byte(`{"start_date":"2026-02-30"}`), &bad); err == nil || !strings.Contains(err.Error(), "2026-02-30") {
		t.Errorf("bad start date error %v", err)
	}
	if err := json.Unmarshal([]byte(`{"settle_delay":"2 hours"}`), &bad); err == nil || !strings.Contains(err.Error(), "2 hours") {
		t.Errorf("bad settle delay error %v", err)
	}
	d := a.WithDefaults(2 * time.Hour)
	if d.SettleDelay.D() != 90*time.Minute {
		t.Error("WithDefaults replaced an explicit settle delay")
	}
	e := valid().WithDefaults(2 * time.Hour)
	if e.TimeZone != "UTC" || e.SettleDelay.D() != 2*time.Hour || e.Destination.Format != "parquet" || e.Destination.Compression != "snappy" || e.Destination.Prefix != DefaultPrefix {
		t.Errorf("defaults %+v", e)
	}
	if p, err := e.Prefix("prod"); err != nil || p != "daybook/acct_abcdefghijklmnop" {
		t.Errorf("Prefix = %q %v", p, err)
	}
}

// TestFormatDefaults checks the one place a destination's empty format and
// compression are filled in, and the messages naming the allowed values.
func TestFormatDefaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		format, compression string
		wantFormat          fileformat.Format
		wantCodec           fileformat.Codec
		wantErr             string // of Validate; empty: valid
	}{
		{"", "", fileformat.Parquet, fileformat.Snappy, ""},
		{"", "zstd", fileformat.Parquet, fileformat.Zstd, ""},
		{"parquet", "", fileformat.Parquet, fileformat.Snappy, ""},
		{"ndjson", "", fileformat.NDJSON, fileformat.Gzip, ""},
		{"ndjson", "gzip", fileformat.NDJSON, fileformat.Gzip, ""},
		{"", "gzip", fileformat.Parquet, fileformat.Gzip, `destination.compression "gzip": parquet takes snappy or zstd`},
		{"ndjson", "snappy", fileformat.NDJSON, fileformat.Snappy, `destination.compression "snappy": ndjson takes gzip`},
		{"csv", "", "", "", `destination.format "csv": want parquet or ndjson`},
	}
	for _, tc := range cases {
		t.Run(tc.format+"/"+tc.compression, func(t *testing.T) {
			a := Account{ID: "acct_abcdefghijklmnop", StartDate: civil.MustParse("2026-01-01"), Datasets: []string{"events"},
				Destination: Destination{Bucket: "acme-exports", Format: fileformat.Format(tc.format), Compression: fileformat.Codec(tc.compression)}}
			err := a.Validate(datasettest.Example(t), testRules)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.wantErr)
			}
			f, err := a.Destination.FileFormat()
			if f != tc.wantFormat || (err != nil) != (tc.wantFormat == "") {
				t.Errorf("FileFormat() = %q, %v; want %q", f, err, tc.wantFormat)
			}
			if tc.wantFormat == "" {
				return
			}
			d := a.WithDefaults(0).Destination
			if d.Format != tc.wantFormat || d.Compression != tc.wantCodec {
				t.Errorf("WithDefaults: format %q compression %q, want %q %q", d.Format, d.Compression, tc.wantFormat, tc.wantCodec)
			}
		})
	}
}

func at(t *testing.T, zone, local string) time.Time {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := time.ParseInLocation("2006-01-02 15:04", local, loc)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestClosedThroughNeverToday(t *testing.T) {
	t.Parallel()
	dur := func(d time.Duration) *Duration { v := Duration(d); return &v }
	cases := []struct {
		zone   string
		local  string
		settle *Duration
		want   string
	}{
		{"America/Sao_Paulo", "2026-03-10 23:59", nil, "2026-03-09"},
		{"America/Sao_Paulo", "2026-03-11 00:01", nil, "2026-03-10"},
		{"America/Sao_Paulo", "2026-03-11 00:01", dur(2 * time.Hour), "2026-03-09"},
		{"America/Sao_Paulo", "2026-03-11 02:00", dur(2 * time.Hour), "2026-03-10"},
		{"Asia/Kolkata", "2026-03-10 23:59", nil, "2026-03-09"},
		{"Asia/Kolkata", "2026-03-11 00:00", nil, "2026-03-10"},
		{"Asia/Kolkata", "2026-03-11 00:01", dur(30 * time.Minute), "2026-03-09"},
		{"UTC", "2026-03-11 00:01", dur(48 * time.Hour), "2026-03-08"},
	}
	for _, c := range cases {
		a := valid()
		a.TimeZone, a.SettleDelay = c.zone, c.settle
		now := at(t, c.zone, c.local)
		got := a.ClosedThrough(now)
		if got.String() != c.want {
			t.Errorf("%s %s settle %v: closed through %s, want %s", c.zone, c.local, c.settle, got, c.want)
		}
		if today := civil.In(now, mustLoc(c.zone)); !got.Before(today) {
			t.Errorf("%s %s: closed through %s is not before today %s", c.zone, c.local, got, today)
		}
		// The same instant in UTC is a different calendar day for these zones.
		_ = now.UTC()
	}
}

func mustLoc(z string) *time.Location {
	l, err := time.LoadLocation(z)
	if err != nil {
		panic(err)
	}
	return l
}

func TestWindowAcrossDST(t *testing.T) {
	t.Parallel()
	cases := []struct {
		zone, day string
		hours     float64
	}{
		{"Europe/Paris", "2026-03-29", 23},
		{"Europe/Paris", "2026-10-25", 25},
		{"Europe/Paris", "2026-06-01", 24},
		{"America/New_York", "2026-03-08", 23},
		{"America/New_York", "2026-11-01", 25},
		{"Asia/Kolkata", "2026-03-29", 24},
		{"UTC", "2026-03-29", 24},
	}
	for _, c := range cases {
		a := valid()
		a.TimeZone = c.zone
		start, end := a.Window(civil.MustParse(c.day))
		if h := end.Sub(start).Hours(); h != c.hours {
			t.Errorf("%s %s: window %s..%s is %vh, want %vh", c.zone, c.day, start, end, h, c.hours)
		}
		if civil.In(start, mustLoc(c.zone)).String() != c.day || start.In(mustLoc(c.zone)).Hour() != 0 {
			t.Errorf("%s %s: window starts %s", c.zone, c.day, start)
		}
	}
	// Kolkata's day starts at 18:30 UTC the day before.
	a := valid()
	a.TimeZone = "Asia/Kolkata"
	start, _ := a.Window(civil.MustParse("2026-03-10"))
	if got := start.UTC().Format(time.RFC3339); got != "2026-03-09T18:30:00Z" {
		t.Errorf("Kolkata window starts %s", got)
	}
}
