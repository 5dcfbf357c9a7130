package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// callerAPI is the part of STS the CLI calls.
type callerAPI interface {
	GetCallerIdentity(ctx context.Context, params *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

var _ callerAPI = (*sts.Client)(nil)

// requestedBy names who asks for a re-export: --requested-by when given,
// else the caller's AWS identity (the ARN STS reports), else the local user
// with a warning on stderr.
func (a *app) requestedBy(ctx context.Context, api callerAPI, override string) string {
	if override != "" {
		return override
	}
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err == nil && aws.ToString(out.Arn) != "" {
		return aws.ToString(out.Arn)
	}
	who := "cli:" + cmp.Or(a.osUser(), "unknown-user")
	if err != nil {
		fmt.Fprintf(a.stderr, "daybook: could not read the caller's AWS identity (%v); requested_by is %q (set it with --requested-by)\n", err, who)
	}
	return who
}
