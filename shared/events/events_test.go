package events

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"
)

// fakeAPI records entries and answers with out/err.
type fakeAPI struct {
	in       []*eventbridge.PutEventsInput
	out      *eventbridge.PutEventsOutput
	err      error
	deadline bool
}

func (f *fakeAPI) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	f.in = append(f.in, in)
	_, f.deadline = ctx.Deadline()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if f.out == nil {
		return &eventbridge.PutEventsOutput{}, f.err
	}
	return f.out, f.err
}

func TestPublish(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	api := &fakeAPI{}
	p := &Publisher{API: api, Bus: "daybook-test", Now: func() time.Time { return at }}
	// A cancelled caller still publishes: what it reports is done.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	detail := Committed{Version: DetailVersion, Account: "acct_x", Dataset: "events", Day: "2026-03-09", Generation: 2, Rows: 10}
	if err := p.Publish(ctx, DetailCommitted, detail); err != nil {
		t.Fatal(err)
	}
	if len(api.in) != 1 || len(api.in[0].Entries) != 1 || !api.deadline {
		t.Fatalf("PutEvents calls %+v (deadline %v)", api.in, api.deadline)
	}
	e := api.in[0].Entries[0]
	if aws.ToString(e.EventBusName) != "daybook-test" || aws.ToString(e.Source) != Source || aws.ToString(e.DetailType) != DetailCommitted || !aws.ToTime(e.Time).Equal(at) {
		t.Fatalf("entry %+v", e)
	}
	var got Committed
	if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &got); err != nil || got.Account != "acct_x" || got.Generation != 2 || got.Restatement != nil {
		t.Fatalf("detail %s: %v", aws.ToString(e.Detail), err)
	}
	if !strings.Contains(aws.ToString(e.Detail), `"account":"acct_x"`) {
		t.Fatalf("detail %s does not carry account for rules to match", aws.ToString(e.Detail))
	}
}

func TestPublishErrors(t *testing.T) {
	t.Parallel()
	apiErr := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "x"} }
	tests := []struct {
		name string
		api  *fakeAPI
		want error
	}{
		{"no bus", &fakeAPI{err: apiErr("ResourceNotFoundException")}, ErrNoBus},
		{"denied", &fakeAPI{err: apiErr("AccessDeniedException")}, ErrDenied},
		{"throttled", &fakeAPI{err: apiErr("ThrottlingException")}, ErrThrottled},
		{"other", &fakeAPI{err: errors.New("connection reset")}, ErrPublish},
		{"entry refused", &fakeAPI{out: &eventbridge.PutEventsOutput{FailedEntryCount: 1,
			Entries: []ebtypes.PutEventsResultEntry{{ErrorCode: aws.String("InternalFailure"), ErrorMessage: aws.String("try again")}}}}, ErrRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Publisher{API: tt.api, Bus: "b"}).Publish(context.Background(), DetailStopped, Stopped{Account: "a"})
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrPublish) {
				t.Fatalf("Publish = %v, want %v", err, tt.want)
			}
		})
	}
	big := map[string]string{"x": strings.Repeat("a", MaxEventBytes)}
	api := &fakeAPI{}
	if err := (&Publisher{API: api, Bus: "b"}).Publish(context.Background(), DetailCommitted, big); !errors.Is(err, ErrTooLarge) || len(api.in) != 0 {
		t.Fatalf("too large: %v (%d calls)", err, len(api.in))
	}
	// No bus configured: nothing is published, nothing fails.
	for _, p := range []*Publisher{nil, {API: api}, {Bus: "b"}} {
		if err := p.Publish(context.Background(), DetailCommitted, Committed{}); err != nil || p.Enabled() {
			t.Fatalf("%+v: %v", p, err)
		}
	}
	if len(api.in) != 0 {
		t.Fatalf("a publisher without a bus called PutEvents")
	}
}
