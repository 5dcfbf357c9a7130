package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type attrs map[string]string

func (a attrs) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if a == nil {
		return nil, errors.New("queue gone")
	}
	out := map[string]string{}
	for _, n := range in.AttributeNames {
		if v, ok := a[string(n)]; ok {
			out[string(n)] = v
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}

func TestDepth(t *testing.T) {
	t.Parallel()
	full := attrs{"ApproximateNumberOfMessages": "3", "ApproximateNumberOfMessagesNotVisible": "4", "ApproximateNumberOfMessagesDelayed": "5"}
	cases := []struct {
		name    string
		q       attrs
		want    int
		wantErr string
	}{
		{"waiting and in flight", full, 7, ""},
		{"not a number", attrs{"ApproximateNumberOfMessages": "3", "ApproximateNumberOfMessagesNotVisible": "many"}, 0, `ApproximateNumberOfMessagesNotVisible="many"`},
		{"missing", attrs{"ApproximateNumberOfMessages": "3"}, 0, `ApproximateNumberOfMessagesNotVisible=""`},
		{"api error", nil, 0, "queue gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Depth(context.Background(), c.q, "url", Waiting, InFlight)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to name %s", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Depth = %d, %v; want %d", got, err, c.want)
			}
		})
	}
	if n, err := Depth(context.Background(), full, "url", Waiting, InFlight, Delayed); err != nil || n != 12 {
		t.Fatalf("with delayed: %d, %v; want 12", n, err)
	}
}
