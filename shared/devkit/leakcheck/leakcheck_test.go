package leakcheck

import "testing"

func TestScanFindsExtrasAsWholeWords(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`"host": "db:5432"`, true},
		{`port 5432.`, true},
		{`5432`, true},
		{`"run_id": "run_20260310T130000Z_8295432d5256"`, false},
		{`"sha256": "6ba15432"`, false},
		{`"bytes": 54321`, false},
		{`x5432 and then 5432`, true},
	} {
		got := len(Scan("p/v1/events/dt=2026-01-01/_manifest.json", []byte(tc.body), "5432")) != 0
		if got != tc.want {
			t.Errorf("Scan(%q) found 5432: %v, want %v", tc.body, got, tc.want)
		}
	}
}
