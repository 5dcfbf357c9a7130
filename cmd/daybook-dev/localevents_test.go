package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/jobs"
)

// TestLocalSampleEventsAgreeWithTheLocalAccount: whatever the date and the
// hour, the manual requests local up writes pass the exporter's own check
// (jobs.CheckRequest) against the local account it registers: no day before
// its start date, none not closed yet, the range within the bound. The
// fixed samples in events/ would be refused at most of these instants.
func TestLocalSampleEventsAgreeWithTheLocalAccount(t *testing.T) {
	t.Parallel()
	names := datasettest.Example(t).Names()
	settle := envvar.DefaultSettleDelay
	for _, now := range []time.Time{
		time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC),
		time.Date(2027, 3, 1, 0, 30, 0, 0, time.UTC), // before the settle delay of yesterday ends
		time.Date(2028, 2, 29, 1, 59, 0, 0, time.UTC),
		time.Date(2031, 7, 15, 12, 0, 0, 0, time.UTC),
	} {
		acct := localAccount(names, now)
		dir := localDir(t.TempDir())
		day, err := writeLocalEvents(dir, acct, settle, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{localManualEvent, localRangeEvent} {
			b, err := os.ReadFile(filepath.Join(dir.eventsDir(), f))
			if err != nil {
				t.Fatal(err)
			}
			var ev struct {
				Records []struct {
					Body string `json:"body"`
				}
			}
			if err := json.Unmarshal(b, &ev); err != nil || len(ev.Records) != 1 {
				t.Fatalf("%s: %v\n%s", f, err, b)
			}
			m, err := jobs.Parse(datasettest.Example(t), ev.Records[0].Body)
			if err != nil || m.Manual == nil {
				t.Fatalf("%s: %v", f, err)
			}
			if _, _, err := jobs.CheckRequest(datasettest.Example(t), *m.Manual, &acct, jobs.Limits{Now: now, SettleDelay: settle}); err != nil {
				t.Errorf("at %s, %s is refused: %v", now, f, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir.eventsDir(), localDayFile)); strings.TrimSpace(string(b)) != day.String() {
			t.Errorf("day file %q, want %s", b, day)
		}
	}
}
