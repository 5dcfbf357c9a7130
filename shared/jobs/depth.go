package jobs

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueAttributes is the part of the SQS client Depth uses.
type QueueAttributes interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ QueueAttributes = (*sqs.Client)(nil)

// Waiting, InFlight and Delayed name the message counts Depth adds up.
const (
	Waiting  = sqstypes.QueueAttributeNameApproximateNumberOfMessages
	InFlight = sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible
	Delayed  = sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed
)

// Depth returns the sum of the queue's approximate message counts named by
// counts (Waiting, InFlight, Delayed), read in one GetQueueAttributes. A
// count the queue does not report as a number is an error naming the
// attribute and its value.
func Depth(ctx context.Context, q QueueAttributes, url string, counts ...sqstypes.QueueAttributeName) (int, error) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: counts})
	if err != nil {
		return 0, err
	}
	total := 0
	for _, n := range counts {
		v, err := strconv.Atoi(out.Attributes[string(n)])
		if err != nil {
			return 0, fmt.Errorf("%s=%q: %w", n, out.Attributes[string(n)], err)
		}
		total += v
	}
	return total, nil
}
