package samstacktest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// CreateTable creates in's table through client. CreateTable is not
// idempotent: when an attempt's answer is lost (the connection closed
// while its response was read) the SDK sends the request again, and the
// table the first attempt made is then "in use". That refusal after an
// unanswered attempt is the table this call created; before any, it is
// a table someone else made, and an error.
func CreateTable(ctx context.Context, client *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	var unanswered atomic.Bool
	// Runs once per attempt: the retry step is before it in the stack.
	perAttempt := middleware.FinalizeMiddlewareFunc("daybookUnanswered",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			var api smithy.APIError
			if err != nil && !errors.As(err, &api) {
				unanswered.Store(true)
			}
			return out, md, err
		})
	_, err := client.CreateTable(ctx, in, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(perAttempt, middleware.After)
		})
	})
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) && unanswered.Load() {
		return nil
	}
	return err
}
