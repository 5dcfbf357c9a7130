package ledger

// Issued claim tokens. A job message carries the claim token the sweeper's
// Claim took, and a slice message the token of the claim that planned its
// slices. Once that claim has ended the partition row no longer holds it,
// and a message that comes back with it is an at-least-once redelivery (to
// drop); a message with a token the partition never had is forged (to
// refuse). To tell the two apart the ledger keeps every token it hands out
// in a message for a while, one small item per token:
//
//	issued token:  pk=T#<account>#<dataset>#<day>   sk=<token>
//	               account_id, dataset, day, claimed_at, token_job (Claim:
//	               its job was sent), generation and slice_count (PlanSlices:
//	               the plan made under it), updated_at, expires_at (TTL)
//
// Claim writes the item before its claim takes effect (so a job never
// carries a token without one; a claim refused afterwards leaves an item
// for a token nobody ever saw), PlanSlices adds the plan to it (creating it
// for a manual claim, whose token only travels in slice messages). Items
// expire after TokenRetention, longer than SQS keeps any message.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TokenRetention is how long an issued token's item is kept: SQS keeps a
// message at most 14 days.
const TokenRetention = 30 * 24 * time.Hour

const pkTokenPrefix = "T#"

// Issued is what the ledger recorded about a claim token it handed out.
type Issued struct {
	partition.Key
	Token    string
	IssuedAt time.Time
	// Job: the token was taken by Claim, whose job message carries it.
	Job bool
	// PlanGeneration and PlanSlices are the plan made under the token (0:
	// none).
	PlanGeneration int64
	PlanSlices     int
}

// tokenRecord is the stored form of an issued token.
type tokenRecord struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	AccountID  string `dynamodbav:"account_id"`
	Dataset    string `dynamodbav:"dataset"`
	Day        string `dynamodbav:"day"`
	ClaimedAt  string `dynamodbav:"claimed_at,omitempty"`
	Job        bool   `dynamodbav:"token_job,omitempty"`
	Generation int64  `dynamodbav:"generation,omitempty"`
	Slices     int    `dynamodbav:"slice_count,omitempty"`
	UpdatedAt  string `dynamodbav:"updated_at"`
	ExpiresAt  int64  `dynamodbav:"expires_at"`
}

func tokenPK(k partition.Key) string {
	return pkTokenPrefix + k.AccountID + "#" + k.Dataset + "#" + k.Day.String()
}

func tokenKey(k partition.Key, token string) map[string]types.AttributeValue {
	return tableKey(tokenPK(k), token)
}

// issueJobToken records token as handed out in a job message of key.
func (l *kernel) issueJobToken(ctx context.Context, key partition.Key, token string, now time.Time) error {
	item, err := attributevalue.MarshalMap(tokenRecord{
		PK: tokenPK(key), SK: token,
		AccountID: key.AccountID, Dataset: key.Dataset, Day: key.Day.String(), ClaimedAt: fmtTime(now), Job: true,
		UpdatedAt: fmtTime(now), ExpiresAt: now.Add(TokenRetention).Unix(),
	})
	if err != nil {
		return fmt.Errorf("ledger: encode the token of %s: %w", key, err)
	}
	if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.cfg.Table), Item: item}); err != nil {
		return fmt.Errorf("ledger: record the claim token of %s: %w", key, err)
	}
	return nil
}

// issuePlanToken records the plan p made under its token.
func (l *kernel) issuePlanToken(ctx context.Context, p SlicePlan) error {
	now := l.now()
	upd := expression.Set(name(attrAccountID), val(p.AccountID)).
		Set(name(attrDataset), val(p.Dataset)).
		Set(name(attrDay), val(p.Day.String())).
		Set(name(attrGeneration), val(p.Generation)).
		Set(name(attrSlices), val(p.Slices)).
		Set(name(attrTokenJob), name(attrTokenJob).IfNotExists(val(false))).
		Set(name(attrUpdatedAt), val(fmtTime(now))).
		Set(name(AttrExpiresAt), val(now.Add(TokenRetention).Unix()))
	if _, err := l.update(ctx, tokenKey(p.Key, p.Token), upd, expression.ConditionBuilder{}, types.ReturnValueNone); err != nil {
		return fmt.Errorf("ledger: record the plan's token of %s: %w", p.Key, err)
	}
	return nil
}

// IssuedToken returns what the ledger recorded about token for key:
// ErrNotFound when the ledger never handed it out for key's partition (or
// did so more than TokenRetention ago).
func (l Tokens) IssuedToken(ctx context.Context, key partition.Key, token string) (Issued, error) {
	if err := validateKey(key); err != nil {
		return Issued{}, err
	}
	item, err := l.getItem(ctx, tokenKey(key, token))
	if errors.Is(err, ErrNotFound) {
		return Issued{}, fmt.Errorf("%w: claim token %s was never issued for %s", ErrNotFound, token, key)
	}
	if err != nil {
		return Issued{}, err
	}
	r, err := decodeItem[tokenRecord](item)
	if err != nil {
		return Issued{}, err
	}
	is := Issued{Key: key, Token: r.SK, Job: r.Job, PlanGeneration: r.Generation, PlanSlices: r.Slices}
	if r.ClaimedAt != "" {
		if is.IssuedAt, err = parseTime(r.ClaimedAt); err != nil {
			return Issued{}, malformed(item, attrClaimedAt, strconv.Quote(r.ClaimedAt), err)
		}
	}
	return is, nil
}
