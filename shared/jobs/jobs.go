// Package jobs owns the messages on the export queue (SPEC E1): a claimed
// job from the sweeper, and a manual re-export request sent by hand or by
// `daybook reexport`. Both kinds reach the same ledger row and claim.
package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Kinds of message.
const (
	KindJob    = "job"
	KindManual = "manual"
)

// MaxManualRangeDays bounds one manual request; larger backfills go through
// `daybook requeue`, which the sweeper paces with its caps.
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
}

// Message is a decoded queue message: exactly one of Job and Manual is set.
type Message struct {
	Job    *Job
	Manual *Manual
}

// Parse decodes and validates a message body. Every error wraps
// ErrMalformed and names the field and the value.
func Parse(body string) (Message, error) {
	var probe struct {
		Kind       string `json:"kind"`
		ClaimToken string `json:"claim_token"`
	}
	if err := json.Unmarshal([]byte(body), &probe); err != nil {
		return Message{}, fmt.Errorf("%w: body is not a JSON object: %v", ErrMalformed, err)
	}
	kind := probe.Kind
	if kind == "" { // hand-written requests may omit kind
		kind = KindManual
		if probe.ClaimToken != "" {
			kind = KindJob
		}
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	switch kind {
	case KindJob:
		var j Job
		if err := dec.Decode(&j); err != nil {
			return Message{}, fmt.Errorf("%w: job: %v", ErrMalformed, err)
		}
		j.Kind = KindJob
		return Message{Job: &j}, j.Validate()
	case KindManual:
		var m Manual
		if err := dec.Decode(&m); err != nil {
			return Message{}, fmt.Errorf("%w: manual request: %v", ErrMalformed, err)
		}
		m.Kind = KindManual
		return Message{Manual: &m}, m.Validate()
	}
	return Message{}, fmt.Errorf("%w: kind %q: want %q or %q", ErrMalformed, probe.Kind, KindJob, KindManual)
}

func required(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%w: %s is required", ErrMalformed, field)
	}
	return nil
}

func day(field, v string) (civil.Date, error) {
	d, err := civil.Parse(v)
	if err != nil {
		return civil.Date{}, fmt.Errorf("%w: %s %q is not a date (YYYY-MM-DD)", ErrMalformed, field, v)
	}
	return d, nil
}

// Validate checks a job's fields.
func (j Job) Validate() error {
	for _, f := range [][2]string{{"account_id", j.AccountID}, {"dataset", j.Dataset}, {"day", j.Day}, {"claim_token", j.ClaimToken}} {
		if err := required(f[0], f[1]); err != nil {
			return err
		}
	}
	if _, err := day("day", j.Day); err != nil {
		return err
	}
	if j.Attempt < 1 {
		return fmt.Errorf("%w: attempt %d: want >= 1", ErrMalformed, j.Attempt)
	}
	return nil
}

// DayValue is the job's day, parsed.
func (j Job) DayValue() civil.Date { d, _ := civil.Parse(j.Day); return d }

// Validate checks a manual request's fields; the range rules are here, the
// "not today or later" rule needs the account's clock and lives with it.
func (m Manual) Validate() error {
	if err := required("account_id", m.AccountID); err != nil {
		return err
	}
	if err := required("dataset", m.Dataset); err != nil {
		return err
	}
	_, _, err := m.Days()
	return err
}

// Days returns the requested range (From == To for one day).
func (m Manual) Days() (from, to civil.Date, err error) {
	switch {
	case m.Day != "" && (m.From != "" || m.To != ""):
		return from, to, fmt.Errorf("%w: give day or from/to, not both (day %q, from %q, to %q)", ErrMalformed, m.Day, m.From, m.To)
	case m.Day != "":
		d, err := day("day", m.Day)
		return d, d, err
	case m.From == "" && m.To == "":
		return from, to, fmt.Errorf("%w: day (or from and to) is required", ErrMalformed)
	}
	if from, err = day("from", m.From); err != nil {
		return
	}
	if to, err = day("to", m.To); err != nil {
		return
	}
	if to.Before(from) {
		return from, to, fmt.Errorf("%w: to %q is before from %q", ErrMalformed, m.To, m.From)
	}
	if n := from.DaysUntil(to) + 1; n > MaxManualRangeDays {
		return from, to, fmt.Errorf("%w: range %s..%s is %d days; at most %d per request (use daybook requeue for more)", ErrMalformed, m.From, m.To, n, MaxManualRangeDays)
	}
	return from, to, nil
}

// Encode renders a message body.
func Encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode message: %w", err)
	}
	return string(b), nil
}
