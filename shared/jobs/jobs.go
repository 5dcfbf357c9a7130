// Package jobs owns the messages on the jobs queue. There are six kinds
// (the "kind" field, which [Parse] reads first):
//   - "job" ([Job], jobs.go): a partition the sweeper claimed;
//   - "manual" ([Manual], jobs.go): a re-export of a day or a range, sent by
//     hand, by `daybook reexport` or by the console;
//   - "slice" ([Slice], slice.go): one time range of a day too large for one run;
//   - "restate_check" ([RestateCheck], lifecycle.go): the sweeper's request
//     to compare a recently closed day's fingerprint with the source's;
//   - "reseed" ([Reseed], lifecycle.go): `daybook reseed`'s request to
//     rebuild an incremental dataset from its start date;
//   - "reseed_done" ([ReseedDone], lifecycle.go): the exporter's own note
//     that every day of a reseed was rebuilt.
//
// A job and a manual request reach the same ledger row and claim.
//
// It also owns the one check of a manual request against its account
// ([CheckRequest], check.go), shared by the exporter, for messages, and,
// through shared/ops, by the CLI, for `daybook reexport`, `daybook retry`
// and `daybook dlq clean`, and by the console, for its re-export and retry
// actions, and the one way
// messages are sent ([Queue], send.go): batches of ten, and what became of
// each message.
package jobs

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Kinds of message.
const (
	KindJob    = "job"
	KindManual = "manual"
)

// MaxManualRangeDays bounds one manual request; larger backfills go through
// `daybook retry`, which the sweeper paces with its caps.
const MaxManualRangeDays = 366

// ErrMalformed marks a message that can never be processed; it goes to the DLQ.
var ErrMalformed = errors.New("malformed message")

// Job is a partition claimed by the sweeper; ClaimToken proves the claim.
type Job struct {
	Kind       string `json:"kind"`
	AccountID  string `json:"account_id"`
	Dataset    string `json:"dataset"`
	Day        string `json:"day"`
	ClaimToken string `json:"claim_token"`
	Attempt    int    `json:"attempt"`
	Generation int64  `json:"generation"`
	Reason     string `json:"reason"`
}

// Manual asks for a re-export of one day (Day) or a range (From..To).
type Manual struct {
	Kind        string `json:"kind"`
	AccountID   string `json:"account_id"`
	Dataset     string `json:"dataset"`
	Day         string `json:"day,omitempty"`
	From        string `json:"from,omitempty"`
	To          string `json:"to,omitempty"`
	RequestedBy string `json:"requested_by,omitempty"`
	// RequestID names the operator's request the message is part of
	// (`daybook reexport`, the console: one per request and dataset). SQS may send a
	// message twice; the exporter serves each request once per day (the
	// ledger's ClaimManual). A message without one, written by hand, is
	// served every time it arrives.
	RequestID string `json:"request_id,omitempty"`
}

// Message is a decoded queue message: exactly one of its fields is set.
type Message struct {
	Job    *Job
	Manual *Manual
	// Lifecycle messages (lifecycle.go).
	RestateCheck *RestateCheck
	Reseed       *Reseed
	ReseedDone   *ReseedDone
	// A slice of a partition too large for one run (slice.go).
	Slice *Slice
}

// Parse decodes and validates a message body (Job.Validate, Manual.Validate).
// The body is one JSON object of exactly the message's fields (decode.go:
// names matched exactly, none twice, none unknown, nothing after it).
// Every error wraps ErrMalformed; a field's error is a *FieldError naming
// the field and the value.
func Parse(catalog *dataset.Set, body string) (Message, error) {
	var probe struct {
		Kind       string `json:"kind"`
		ClaimToken string `json:"claim_token"`
	}
	if err := decodeObject("message", body, &probe, false); err != nil {
		return Message{}, err
	}
	kind := probe.Kind
	if kind == "" { // hand-written requests may omit kind
		kind = KindManual
		if probe.ClaimToken != "" {
			kind = KindJob
		}
	}
	if m, ok, err := parseLifecycle(catalog, kind, body); ok {
		return m, err
	}
	switch kind {
	case KindJob:
		var j Job
		if err := decodeObject("job", body, &j, true); err != nil {
			return Message{}, err
		}
		j.Kind = KindJob
		return Message{Job: &j}, j.Validate(catalog)
	case KindManual:
		var m Manual
		if err := decodeObject("manual request", body, &m, true); err != nil {
			return Message{}, err
		}
		m.Kind = KindManual
		return Message{Manual: &m}, m.Validate()
	}
	return Message{}, fmt.Errorf("%w: kind %q: want %q, %q, %q, %q, %q or %q", ErrMalformed, probe.Kind, KindJob, KindManual, KindSlice, KindRestateCheck, KindReseed, KindReseedDone)
}

// MaxJobAttempt bounds a claimed job's attempt number, far above any
// deployment's MAX_ATTEMPTS.
const MaxJobAttempt = 1000

// Validate checks a claimed job's fields as strictly as the sweeper writes
// them: an account id of account.NewID's form, a dataset of the catalog, a
// day, a claim token of the ledger's form (32 lowercase hex digits), an
// attempt from 1 to MaxJobAttempt, a generation of at least 1 and a known
// reason (or none). It is the one validator of a claimed job: Parse calls
// it, so the exporter never sees a job that fails it. Errors are
// *FieldError wrapping ErrMalformed.
func (j Job) Validate(catalog *dataset.Set) error {
	if err := checkAccountID(j.AccountID); err != nil {
		return err
	}
	if _, err := knownDataset(catalog, j.Dataset); err != nil {
		return err
	}
	if _, err := parseDay("day", j.Day); err != nil {
		return err
	}
	switch {
	case j.ClaimToken == "":
		return malformed("claim_token", "", "is required")
	case !claimTokenRE.MatchString(j.ClaimToken):
		return malformed("claim_token", j.ClaimToken, "is not a claim token (32 lowercase hex digits)")
	case j.Attempt < 1:
		return malformed("attempt", fmt.Sprint(j.Attempt), "is not a run's attempt number (want >= 1)")
	case j.Attempt > MaxJobAttempt:
		return malformed("attempt", fmt.Sprint(j.Attempt), fmt.Sprintf("is above %d, beyond any run's attempt number", MaxJobAttempt))
	case j.Generation < 1:
		return malformed("generation", fmt.Sprint(j.Generation), "is not a claimed generation (want >= 1)")
	case j.Reason != "" && !partition.Reason(j.Reason).Valid():
		return malformed("reason", j.Reason, "is not a reason (scheduled, backfill, retry, manual, restatement, reseed)")
	}
	return nil
}

// DayValue is the job's day, parsed.
func (j Job) DayValue() civil.Date { d, _ := civil.Parse(j.Day); return d }

// Validate checks a manual request's form: an account id of
// account.NewID's form, a dataset name, one day or a range (from <= to,
// at most MaxManualRangeDays), and a requested_by of at most
// MaxRequestedBy printable characters, and a request_id of
// checkRequestID's form or none. Whether the account exists, exports the
// dataset and has closed those days is CheckRequest's, which needs the
// account. Errors are *FieldError wrapping ErrMalformed.
func (m Manual) Validate() error {
	if err := checkAccountID(m.AccountID); err != nil {
		return err
	}
	if err := checkDatasetName(m.Dataset); err != nil {
		return err
	}
	if err := checkRequestedBy(m.RequestedBy); err != nil {
		return err
	}
	if m.RequestID != "" {
		if err := checkRequestID(m.RequestID); err != nil {
			return err
		}
	}
	_, _, err := m.Days()
	return err
}

// Days returns the requested range (From == To for one day), checked for
// form and for MaxManualRangeDays.
func (m Manual) Days() (from, to civil.Date, err error) { return m.days(MaxManualRangeDays) }

// Encode renders a message body.
func Encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode message: %w", err)
	}
	return string(b), nil
}
