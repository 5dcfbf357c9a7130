// Package storekey reads the key a customer gave daybook instead of
// federating (credential_mode secret: a GCS service account key or HMAC
// key, an Azure SAS), from AWS Secrets Manager, by the ARN the account
// names. The account record never holds the key itself.
//
// Every read is checked against the deployment's secret pattern (the
// exporter's IAM resource pattern, DESTINATION_SECRET_PATTERN) before the
// call, so a record that slipped past validation cannot make daybook read
// another secret of the deployment even where IAM would allow it, and the
// value is bounded (Secrets Manager's own limit, 64 KiB).
package storekey

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/account"
)

// API is the Secrets Manager call storekey makes, with the SDK's signature.
type API interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ API = (*secretsmanager.Client)(nil)

// MaxBytes is the largest secret value read: Secrets Manager's limit.
const MaxBytes = 64 << 10

// Errors of Read.
var (
	// ErrOutside: the ARN is outside the deployment's secret pattern.
	ErrOutside = errors.New("secret outside the deployment's destination secrets")
	// ErrDenied: Secrets Manager refused the read (IAM, or the key policy
	// of the secret's KMS key).
	ErrDenied = errors.New("secret read denied")
	// ErrMissing: no such secret, or it has no current value.
	ErrMissing = errors.New("secret not found")
)

// Reader reads destination keys.
type Reader struct {
	API API
	// Pattern is DESTINATION_SECRET_PATTERN (account.Rules.SecretPattern):
	// an IAM-style ARN pattern. Empty refuses every read.
	Pattern string
}

// Read returns the secret's current value (SecretString, else
// SecretBinary). Errors wrap ErrOutside, ErrDenied or ErrMissing where they
// are one, and name the ARN, never the value.
func (r Reader) Read(ctx context.Context, arn string) ([]byte, error) {
	if r.Pattern == "" || !account.MatchWildcard(r.Pattern, arn) {
		return nil, fmt.Errorf("%w: %s does not match %q", ErrOutside, arn, r.Pattern)
	}
	out, err := r.API.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			switch ae.ErrorCode() {
			case "AccessDeniedException", "AccessDenied":
				return nil, fmt.Errorf("%w: %s: the exporter's role needs secretsmanager:GetSecretValue on it (and kms:Decrypt on its key when it has its own): %w", ErrDenied, arn, err)
			case "ResourceNotFoundException":
				return nil, fmt.Errorf("%w: %s: %w", ErrMissing, arn, err)
			}
		}
		return nil, fmt.Errorf("read secret %s: %w", arn, err)
	}
	var v []byte
	switch {
	case out.SecretString != nil:
		v = []byte(*out.SecretString)
	case out.SecretBinary != nil:
		v = out.SecretBinary
	default:
		return nil, fmt.Errorf("%w: %s has no value", ErrMissing, arn)
	}
	if len(v) > MaxBytes {
		return nil, fmt.Errorf("secret %s: %d bytes, more than %d", arn, len(v), MaxBytes)
	}
	return v, nil
}
