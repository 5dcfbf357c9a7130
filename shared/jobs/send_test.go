package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/daybook-dev/daybook/shared/civil"
)

// batches records each request and answers it as told: answer[n] for the
// n-th request (nil: accept every entry).
type batches struct {
	requests []*sqs.SendMessageBatchInput
	answer   map[int]func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)
}

func (b *batches) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	b.requests = append(b.requests, in)
	if f := b.answer[len(b.requests)-1]; f != nil {
		return f(in)
	}
	return acceptAll(in), nil
}

func acceptAll(in *sqs.SendMessageBatchInput) *sqs.SendMessageBatchOutput {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + aws.ToString(e.MessageBody))})
	}
	return out
}

func outgoing(n int) []Outgoing {
	msgs := make([]Outgoing, n)
	for i := range msgs {
		msgs[i] = Outgoing{Body: strconv.Itoa(i)}
	}
	return msgs
}

// TestSendBatchesInOrder: 23 messages go in batches of 10, 10 and 3, in
// order, with ids the request's positions; a failed request fails its own
// messages, an entry the queue refuses or leaves unanswered is not
// sent, and every other message carries its id.
func TestSendBatchesInOrder(t *testing.T) {
	t.Parallel()
	gone := errors.New("connection reset")
	api := &batches{answer: map[int]func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error){
		0: func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			out := acceptAll(in)
			out.Successful = append(out.Successful[:3], out.Successful[6:]...) // 3, 4, 5 unanswered...
			out.Failed = []sqstypes.BatchResultErrorEntry{{Id: aws.String("4"), Code: aws.String("InternalError"), Message: aws.String("try again")}}
			return out, nil // ...and 4 refused
		},
		1: func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) { return nil, gone },
	}}
	q := Queue{API: api, URL: "https://queue"}
	msgs := outgoing(23)
	msgs[22].Delay = 90 * time.Second
	var sent []Sent
	for batch := range slices.Chunk(msgs, BatchSize) {
		s, _ := q.SendBatch(t.Context(), batch)
		sent = append(sent, s...)
	}

	if len(api.requests) != 3 {
		t.Fatalf("%d requests, want 3", len(api.requests))
	}
	for n, want := range []int{10, 10, 3} {
		in := api.requests[n]
		if aws.ToString(in.QueueUrl) != "https://queue" || len(in.Entries) != want {
			t.Fatalf("request %d: queue %s, %d entries; want https://queue, %d", n, aws.ToString(in.QueueUrl), len(in.Entries), want)
		}
		for i, e := range in.Entries {
			if aws.ToString(e.Id) != strconv.Itoa(i) || aws.ToString(e.MessageBody) != strconv.Itoa(10*n+i) {
				t.Errorf("request %d entry %d: id %s body %s", n, i, aws.ToString(e.Id), aws.ToString(e.MessageBody))
			}
		}
	}
	if d := api.requests[2].Entries[2].DelaySeconds; d != 90 {
		t.Errorf("DelaySeconds = %d, want 90", d)
	}
	if len(sent) != 23 {
		t.Fatalf("%d results, want 23", len(sent))
	}
	for i, s := range sent {
		var want error
		switch {
		case i == 3 || i == 5:
			want = ErrNoResult
		case i == 4:
			want = &EntryError{Code: "InternalError", Message: "try again"}
		case i >= 10 && i < 20:
			want = gone
		}
		if fmt.Sprint(s.Err) != fmt.Sprint(want) {
			t.Errorf("message %d: %v, want %v", i, s.Err, want)
		}
		if (want == nil) != (s.MessageID == "m-"+strconv.Itoa(i)) {
			t.Errorf("message %d: id %q", i, s.MessageID)
		}
	}
}

// TestSendBatchRefusesMoreThanTen: one request carries ten messages at
// most; more is the caller's error, and nothing is sent.
func TestSendBatchRefusesMoreThanTen(t *testing.T) {
	t.Parallel()
	api := &batches{}
	if _, err := (Queue{API: api}).SendBatch(t.Context(), outgoing(11)); err == nil || len(api.requests) != 0 {
		t.Fatalf("SendBatch of 11 = %v after %d requests, want an error and none", err, len(api.requests))
	}
}

func TestNotSent(t *testing.T) {
	t.Parallel()
	gone := errors.New("connection reset")
	refused := &EntryError{Code: "InternalError", Message: "try again"}
	cases := []struct {
		name string
		sent []Sent
		want string
	}{
		{"all accepted", []Sent{{MessageID: "a"}, {MessageID: "b"}}, ""},
		{"the request failed", []Sent{{Err: gone}, {Err: gone}}, "connection reset"},
		{"one refused", []Sent{{MessageID: "a"}, {Err: refused}, {MessageID: "c"}}, "1 of 3 messages not sent: InternalError: try again"},
		{"unanswered first", []Sent{{Err: ErrNoResult}, {Err: refused}}, "2 of 2 messages not sent: no result for entry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NotSent(c.sent)
			if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
				t.Errorf("NotSent = %v, want %q", err, c.want)
			}
		})
	}
}

// TestSendStopsAtTheFirstBatchNotSent: Send puts 23 messages in requests of
// 10, 10 and 3, in order; a request with a message the queue refused ends
// it with NotSent's error, and no later request is made.
func TestSendStopsAtTheFirstBatchNotSent(t *testing.T) {
	t.Parallel()
	api := &batches{}
	q := Queue{API: api, URL: "https://queue"}
	if err := q.Send(t.Context(), outgoing(23)...); err != nil || len(api.requests) != 3 {
		t.Fatalf("Send of 23 = %v in %d requests, want nil in 3", err, len(api.requests))
	}
	for n, want := range []int{10, 10, 3} {
		if got := len(api.requests[n].Entries); got != want || aws.ToString(api.requests[n].Entries[0].MessageBody) != strconv.Itoa(10*n) {
			t.Errorf("request %d: %d entries from %s, want %d from %d", n, got, aws.ToString(api.requests[n].Entries[0].MessageBody), want, 10*n)
		}
	}

	api = &batches{answer: map[int]func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error){
		1: func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			out := acceptAll(in)
			out.Successful = out.Successful[1:]
			out.Failed = []sqstypes.BatchResultErrorEntry{{Id: aws.String("0"), Code: aws.String("InternalError"), Message: aws.String("try again")}}
			return out, nil
		},
	}}
	err := Queue{API: api, URL: "https://queue"}.Send(t.Context(), outgoing(23)...)
	if err == nil || err.Error() != "1 of 10 messages not sent: InternalError: try again" || len(api.requests) != 2 {
		t.Fatalf("Send with message 10 refused = %v after %d requests, want 1 of 10 not sent after 2", err, len(api.requests))
	}
}

// TestSendAllGoesOnPastAFailedBatch: SendAll sends every batch, whatever
// an earlier one met, and says of each message whether it was sent: a
// refused entry is that message's, a failed request every message's of
// its batch.
func TestSendAllGoesOnPastAFailedBatch(t *testing.T) {
	t.Parallel()
	api := &batches{answer: map[int]func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error){
		0: func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			out := acceptAll(in)
			out.Successful = append(out.Successful[:3], out.Successful[4:]...)
			out.Failed = []sqstypes.BatchResultErrorEntry{{Id: aws.String("3"), Code: aws.String("InternalError"), Message: aws.String("try again")}}
			return out, nil
		},
		1: func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			return nil, errors.New("connection reset")
		},
	}}
	sent := Queue{API: api, URL: "https://queue"}.SendAll(t.Context(), outgoing(23)...)
	if len(api.requests) != 3 || len(sent) != 23 {
		t.Fatalf("SendAll of 23: %d requests, %d results; want 3 and 23", len(api.requests), len(sent))
	}
	for i, s := range sent {
		var want string
		switch {
		case i == 3:
			want = "InternalError: try again"
		case i >= 10 && i < 20:
			want = "connection reset"
		}
		got := ""
		if s.Err != nil {
			got = s.Err.Error()
		}
		if got != want || (want == "") != (s.MessageID == "m-"+strconv.Itoa(i)) {
			t.Errorf("message %d: %+v, want error %q", i, s, want)
		}
	}
}

// TestPerDay: a range becomes one single-day request per day, each by the
// range's requester and part of its request; Encoded encodes them in order.
func TestPerDay(t *testing.T) {
	t.Parallel()
	m := Manual{Kind: KindManual, AccountID: "acct_aaaaaaaaaaaaaaaa", Dataset: "events", From: "2026-11-30", To: "2026-12-02", RequestedBy: "ops-erin", RequestID: "r-7"}
	msgs, err := Encoded(m.PerDay(civil.MustParse("2026-11-30"), civil.MustParse("2026-12-02"))...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range msgs {
		got = append(got, o.Body)
	}
	want := []string{
		`{"kind":"manual","account_id":"acct_aaaaaaaaaaaaaaaa","dataset":"events","day":"2026-11-30","requested_by":"ops-erin","request_id":"r-7"}`,
		`{"kind":"manual","account_id":"acct_aaaaaaaaaaaaaaaa","dataset":"events","day":"2026-12-01","requested_by":"ops-erin","request_id":"r-7"}`,
		`{"kind":"manual","account_id":"acct_aaaaaaaaaaaaaaaa","dataset":"events","day":"2026-12-02","requested_by":"ops-erin","request_id":"r-7"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("per day:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
