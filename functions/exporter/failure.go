package main

import (
	"context"
	"errors"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/source"
)

// classify names the cause of a failed export with the code the customer
// sees in the delivery manifest (manifest.Code). The errors are classified
// where they arise: the source marks what it could not read
// (source.ErrUnavailable), rows that do not fit are dataset.RowError (and a
// catalog that breaks the delivered schema dataset.ErrIncompatible), and
// the bucket names its AWS errors (bucket.Classify, which also covers the
// errors of its multipart writers), and a destination whose bucket owner
// cannot be determined is account.ErrNoBucketOwner (bucketOf). A day folder
// holding more objects or unfinished uploads than the run lists there
// (bucket.ErrTooMany) is destination_crowded: the bucket's content, not the
// sender's fault. A run out of time is timed_out whatever it was doing.
// Anything else is internal.
func classify(err error) manifest.Code {
	var row *dataset.RowError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return manifest.CodeTimedOut
	case errors.As(err, &row), errors.Is(err, dataset.ErrRowMismatch), errors.Is(err, dataset.ErrIncompatible):
		return manifest.CodeSchemaMismatch
	case errors.Is(err, source.ErrUnavailable):
		return manifest.CodeSourceUnavailable
	case errors.Is(err, account.ErrNoBucketOwner):
		return manifest.CodeDestinationMisconfigured
	case errors.Is(err, bucket.ErrTooMany):
		return manifest.CodeDestinationCrowded
	}
	switch b := bucket.Classify(err); {
	case errors.Is(b, bucket.ErrAccessDenied):
		return manifest.CodeDestinationDenied
	case errors.Is(b, bucket.ErrNoSuchBucket):
		return manifest.CodeDestinationMissing
	}
	return manifest.CodeInternal
}

// failure is a failed export's error as the ledger records it: its text is
// manifest.CauseText, the cause code then the raw error, so the code the
// delivery manifest shows (manifest.CauseOf) is the one decided here, and
// the raw error (hosts, users, SQL) stays in the ledger and the logs.
type failure struct {
	code manifest.Code
	err  error
}

func newFailure(err error) *failure { return &failure{code: classify(err), err: err} }

func (f *failure) Error() string { return manifest.CauseText(f.code, f.err) }
func (f *failure) Unwrap() error { return f.err }
