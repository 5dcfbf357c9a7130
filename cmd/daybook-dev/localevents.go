package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
)

// The manual samples in events/ name fixed days, which a local account that
// starts 7 closed days back refuses (before its start date) once those days
// are older. `local up` writes copies of them into <dir>/events/ whose days
// are the local account's own: the newest closed day for the re-export, its
// first closed days for the range. `make invoke-exporter` defaults to that
// re-export, and <dir>/events/day names its day for the commands after it.

func (d localDir) eventsDir() string { return filepath.Join(string(d), "events") }

// manualEventFiles are the sample manual requests `local up` writes.
const (
	localManualEvent = "exporter-manual.json"
	localRangeEvent  = "exporter-manual-range.json"
	localDayFile     = "day"
)

// localEvents are the manual samples for acct at now: a re-export of its
// newest closed day, and a range of daily_stats over its first closed days
// (at most a week).
func localEvents(acct account.Account, settle time.Duration, now time.Time) (day civil.Date, manual, rng jobs.Manual) {
	closed := acct.WithDefaults(settle).ClosedThrough(now)
	to := acct.StartDate.AddDays(6)
	if closed.Before(to) {
		to = closed
	}
	manual = jobs.Manual{Kind: jobs.KindManual, AccountID: acct.ID, Dataset: "events", Day: closed.String(), RequestedBy: "cli:ops"}
	rng = jobs.Manual{Kind: jobs.KindManual, AccountID: acct.ID, Dataset: "daily_stats", From: acct.StartDate.String(), To: to.String(), RequestedBy: "cli:ops"}
	return closed, manual, rng
}

// sqsEvent is the SQS event the exporter receives with body as its one
// record, in the shape of the samples in events/.
func sqsEvent(id string, body string, now time.Time) ([]byte, error) {
	ms := fmt.Sprint(now.UnixMilli())
	ev := map[string]any{"Records": []map[string]any{{
		"messageId": id, "receiptHandle": "AQEBlocal" + id, "body": body,
		"attributes":        map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": ms, "ApproximateFirstReceiveTimestamp": ms},
		"messageAttributes": map[string]any{}, "eventSource": "aws:sqs",
		"eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:daybook-local-jobs", "awsRegion": "us-east-1",
	}}}
	return json.MarshalIndent(ev, "", "  ")
}

// writeLocalEvents writes the local account's manual samples into
// <dir>/events/ and returns the re-export's day.
func writeLocalEvents(d localDir, acct account.Account, settle time.Duration, now time.Time) (civil.Date, error) {
	day, manual, rng := localEvents(acct, settle, now)
	if err := os.MkdirAll(d.eventsDir(), 0o755); err != nil {
		return civil.Date{}, err
	}
	for i, f := range []struct {
		name string
		m    jobs.Manual
	}{{localManualEvent, manual}, {localRangeEvent, rng}} {
		body, err := jobs.Encode(f.m)
		if err != nil {
			return civil.Date{}, err
		}
		b, err := sqsEvent(fmt.Sprintf("local-sample-%d", i+1), body, now)
		if err != nil {
			return civil.Date{}, err
		}
		if err := os.WriteFile(filepath.Join(d.eventsDir(), f.name), append(b, '\n'), 0o644); err != nil {
			return civil.Date{}, err
		}
	}
	return day, os.WriteFile(filepath.Join(d.eventsDir(), localDayFile), []byte(day.String()+"\n"), 0o644)
}
