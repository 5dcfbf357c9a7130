// Package events publishes daybook's partition events on an EventBridge bus
// (R2): one `daybook.partition.committed` per committed generation, and
// one `daybook.partition.stopped` per partition that stops retrying. The
// detail schemas are documented in docs/events.md; a platform forwards an
// account's events to that customer with a rule on `detail.account`.
//
// Publishing ([Publisher.Publish]) is best effort by contract: the caller has already committed
// (or recorded) what the event reports, so an error here is logged and
// counted, never allowed to undo or fail it.
package events

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"
)

// Source is the events' `source`.
const Source = "daybook"

// Detail types.
const (
	DetailCommitted = "daybook.partition.committed"
	DetailStopped   = "daybook.partition.stopped"
)

// MaxEventBytes is EventBridge's limit on one entry.
const MaxEventBytes = 256 << 10

// DefaultTimeout bounds one publish, so a slow bus never holds up the
// ledger writes that follow a commit.
const DefaultTimeout = 5 * time.Second

// Named errors of a publish; every error wraps ErrPublish.
var (
	ErrPublish = errors.New("events: publish failed")
	// ErrNoBus: the bus does not exist (a wrong EVENT_BUS_NAME).
	ErrNoBus = errors.New("events: no such event bus")
	// ErrDenied: the function's role may not put events on the bus.
	ErrDenied = errors.New("events: access denied")
	// ErrThrottled: EventBridge throttled the call.
	ErrThrottled = errors.New("events: throttled")
	// ErrRejected: EventBridge refused the entry (FailedEntryCount).
	ErrRejected = errors.New("events: entry rejected")
	// ErrTooLarge: the event is larger than MaxEventBytes.
	ErrTooLarge = errors.New("events: event too large")
)

// API is the part of the EventBridge client the publisher uses.
type API interface {
	PutEvents(ctx context.Context, params *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ API = (*eventbridge.Client)(nil)

// Publisher puts events on one bus.
type Publisher struct {
	API API
	// Bus is the event bus name or ARN.
	Bus string
	// Timeout bounds one publish (default DefaultTimeout).
	Timeout time.Duration
	// Now stamps the events (default time.Now).
	Now func() time.Time
}

// Enabled reports whether events are published at all (a bus is set).
func (p *Publisher) Enabled() bool { return p != nil && p.API != nil && p.Bus != "" }

// Publish puts one event of detailType with detail (marshalled as JSON) on
// the bus, within Timeout of a context detached from ctx's cancellation (the
// work it reports is done). A publisher without a bus publishes nothing and
// returns nil.
func (p *Publisher) Publish(ctx context.Context, detailType string, detail any) error {
	if !p.Enabled() {
		return nil
	}
	body, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("%w: %s: encode detail: %w", ErrPublish, detailType, err)
	}
	if n := len(body) + len(detailType) + len(Source); n > MaxEventBytes {
		return fmt.Errorf("%w: %w: %s is %d bytes, at most %d", ErrPublish, ErrTooLarge, detailType, n, MaxEventBytes)
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(p.Timeout, DefaultTimeout))
	defer cancel()
	out, err := p.API.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(p.Bus),
		Source:       aws.String(Source),
		DetailType:   aws.String(detailType),
		Detail:       aws.String(string(body)),
		Time:         aws.Time(now().UTC()),
	}}})
	if err != nil {
		return fmt.Errorf("%w: %s on %s: %w", ErrPublish, detailType, p.Bus, named(err))
	}
	if out.FailedEntryCount > 0 {
		code, msg := "", ""
		if len(out.Entries) > 0 {
			code, msg = aws.ToString(out.Entries[0].ErrorCode), aws.ToString(out.Entries[0].ErrorMessage)
		}
		return fmt.Errorf("%w: %w: %s on %s: %s: %s", ErrPublish, ErrRejected, detailType, p.Bus, code, msg)
	}
	return nil
}

// named turns an EventBridge API error into one of the named errors (still
// wrapping the SDK's error).
func named(err error) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.ErrorCode() {
	case "ResourceNotFoundException":
		return fmt.Errorf("%w: %w", ErrNoBus, err)
	case "AccessDeniedException", "AccessDenied", "UnauthorizedOperation":
		return fmt.Errorf("%w: %w", ErrDenied, err)
	case "ThrottlingException", "LimitExceededException":
		return fmt.Errorf("%w: %w", ErrThrottled, err)
	}
	return err
}
