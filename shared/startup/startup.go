// Package startup is the start of a Lambda function, the part the three
// functions' main share: the SDK's configuration loaded once, the function
// built from it by its own build (its configuration read once from the
// environment, its clients, its log), a start-up failure logged and the
// process ended before the first invocation, and the handler started.
package startup

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/logging"
)

// Build builds a function from the SDK's default configuration: the
// handler lambda.Start takes, and the function's log (set even when err
// is not nil, to report it).
type Build func(ctx context.Context, cfg aws.Config) (handler any, log *slog.Logger, err error)

// Run starts the Lambda function named function: it loads the SDK's
// default configuration (awsclient.Load), calls build with it and starts
// the handler. A failure of either is logged on stdout and ends the
// process with status 2: Lambda reports a failed start, and no invocation
// runs on a half-built function.
func Run(function string, build Build) {
	ctx := context.Background()
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		fail(nil, function, "aws configuration", err)
	}
	handler, log, err := build(ctx, cfg)
	if err != nil {
		fail(log, function, "start-up", err)
	}
	lambda.Start(handler)
}

func fail(log *slog.Logger, function, msg string, err error) {
	if log == nil {
		log = logging.ForFunction(os.Stdout, "ERROR", function)
	}
	log.Error(msg, "error", err.Error())
	os.Exit(2)
}
