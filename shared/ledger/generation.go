package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// MaxBucketLead is how far above the claimed generation the generation a
// partition's _SUCCESS commits may be for a run to number its own above it.
//
// The commit protocol itself puts the bucket at most level with the claim:
// a run that committed and died before Complete leaves the claimed
// generation in the bucket, and the next run notes it (NoteCommitted)
// before it removes that _SUCCESS, so the claim after that is numbered
// above it. The margin covers commits whose generation reached no ledger
// write at all (a run given no NoteCommitted, or a ledger row restored from
// a slightly older backup). Anything further ahead was not written by this
// ledger's runs (the bucket is the tenant's, and so is its _SUCCESS): it is
// ErrBucketAhead, so one planted marker can move a partition's generation
// at most this far, and never towards overflow.
const MaxBucketLead = 16

// MaxGeneration is the largest generation the ledger stores (Complete and
// NoteCommitted refuse more, with ErrGenerationRange). Every generation is
// numbered one above another (a claim: the stored one + 1; GenerationAfter:
// the bucket's + 1), so with the stored ones at most 2^62 no increment can
// overflow an int64. No partition gets near it: a day committed every second
// would take 10^11 years; only a number read from a bucket could, and
// GenerationAfter refuses those.
const MaxGeneration int64 = 1 << 62

// ErrGenerationRange: a generation above MaxGeneration (or below 1).
var ErrGenerationRange = errors.New("ledger: generation out of range")

// checkGeneration refuses a generation to store outside 1..MaxGeneration.
func checkGeneration(what string, generation int64) error {
	if generation < 1 || generation > MaxGeneration {
		return fmt.Errorf("%w: %s generation %d, want 1..%d", ErrGenerationRange, what, generation, MaxGeneration)
	}
	return nil
}

// ErrBucketAhead: a partition's _SUCCESS commits a generation further
// ahead of the ledger than MaxBucketLead; see GenerationAfter.
var ErrBucketAhead = errors.New("ledger: the bucket's _SUCCESS is ahead of the ledger")

// GenerationAfter is the generation a run that claimed generation claimed
// commits when the partition's current _SUCCESS (uri, for the error)
// commits found: claimed, or found+1 when found is not lower, so a
// generation only ever increases. A found more than MaxBucketLead above
// claimed is ErrBucketAhead: the partition fails (and retries, then stops)
// until an operator deletes that _SUCCESS; the next attempt, or a requeue
// of a stopped day, then commits the claimed generation.
//
// Neither number may pass MaxGeneration (ErrGenerationRange), so the sum
// never overflows.
func GenerationAfter(claimed, found int64, uri string) (int64, error) {
	if claimed < 1 || claimed > MaxGeneration+1 { // a claim is a stored generation + 1
		return 0, fmt.Errorf("%w: claimed generation %d", ErrGenerationRange, claimed)
	}
	if found < claimed {
		return claimed, nil
	}
	if uint64(found)-uint64(claimed) > MaxBucketLead { // found >= claimed: the exact distance, even from a negative claim
		return 0, fmt.Errorf("%w: %s commits generation %d, more than %d above generation %d of the ledger, so daybook did not write it: delete it, then requeue the day if it stopped retrying",
			ErrBucketAhead, uri, found, MaxBucketLead, claimed)
	}
	if found > MaxGeneration {
		return 0, fmt.Errorf("%w: %s commits generation %d, above the largest the ledger stores (%d), so daybook did not write it: delete it, then requeue the day if it stopped retrying",
			ErrBucketAhead, uri, found, MaxGeneration)
	}
	return found + 1, nil
}

// EverCommitted reports whether a generation of (account, dataset) was
// ever committed, as the ledger knows it: a row with a generation stored by
// Complete, or one found committed in the bucket and noted
// (NoteCommitted's generation_reserved). dataset is a ledger name, so each
// contract answers for itself. One Query of the dataset's rows, filtered,
// read until the first such row; the exporter asks it only before it
// refuses a dataset (functions/exporter/delivered.go).
func (l Partitions) EverCommitted(ctx context.Context, accountID, dataset string) (bool, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(AttrPK).Equal(val(partitionPK(accountID, dataset)))).
		WithFilter(expression.Or(name(attrGeneration).GreaterThan(val(0)), name(attrGenReserved).GreaterThan(val(0)))).
		WithProjection(expression.NamesList(name(AttrSK))).Build()
	if err != nil {
		return false, fmt.Errorf("ledger: build expression: %w", err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(l.cfg.Table), KeyConditionExpression: expr.KeyCondition(),
		FilterExpression: expr.Filter(), ProjectionExpression: expr.Projection(), ConsistentRead: aws.Bool(true),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}
	for {
		out, err := l.db.Query(ctx, in)
		if err != nil {
			return false, fmt.Errorf("ledger: committed generations of %s/%s: %w", accountID, dataset, err)
		}
		if out.Count > 0 {
			return true, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
