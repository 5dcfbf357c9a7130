package ledger

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
)

const t0 = "2026-03-10T12:00:00Z"

var day1 = civil.MustParse("2026-03-01")

func TestDeployedTableMatchesLayout(t *testing.T) {
	cfg, table := deployed(t)
	out, err := dynamodb.NewFromConfig(cfg).DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(ks []types.KeySchemaElement) map[types.KeyType]string {
		m := map[types.KeyType]string{}
		for _, k := range ks {
			m[k.KeyType] = aws.ToString(k.AttributeName)
		}
		return m
	}
	if got := keys(out.Table.KeySchema); got[types.KeyTypeHash] != AttrPK || got[types.KeyTypeRange] != AttrSK {
		t.Errorf("table keys %v, want %s/%s", got, AttrPK, AttrSK)
	}
	var found bool
	for _, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) != IndexDue {
			continue
		}
		found = true
		if got := keys(g.KeySchema); got[types.KeyTypeHash] != AttrDueAccount || got[types.KeyTypeRange] != AttrDueKey {
			t.Errorf("index %s keys %v, want %s/%s", IndexDue, got, AttrDueAccount, AttrDueKey)
		}
		// Due reads state, attempts and the claim fields from the index.
		for _, a := range []string{attrAccountID, attrDataset, attrDay, attrState, attrAttempts, attrClaimToken} {
			if g.Projection.ProjectionType != types.ProjectionTypeAll && !slices.Contains(g.Projection.NonKeyAttributes, a) {
				t.Errorf("index %s does not project %s (%v)", IndexDue, a, g.Projection.NonKeyAttributes)
			}
		}
	}
	if !found {
		t.Errorf("table has no %s index", IndexDue)
	}
}

func TestDayAndLease(t *testing.T) {
	if _, err := civil.Parse("2026-13-01"); err == nil || !strings.Contains(err.Error(), "2026-13-01") {
		t.Errorf("ParseDay error %v does not name the value", err)
	}
	if got := LeaseFrom(900*time.Second, 300*time.Second); got != 20*time.Minute {
		t.Errorf("LeaseFrom = %s", got)
	}
}

func TestBackoffIsCappedFullJitter(t *testing.T) {
	l, _ := newTestLedger(t, newClock(t0), func(c *Config) { c.BackoffBase = time.Minute; c.BackoffCap = 10 * time.Minute })
	for attempt := 1; attempt <= 8; attempt++ {
		ceil := min(time.Minute<<(attempt-1), 10*time.Minute)
		var maxSeen time.Duration
		for range 200 {
			d, err := l.Partitions().Backoff(attempt)
			if err != nil {
				t.Fatal(err)
			}
			if d < time.Second || d > ceil {
				t.Fatalf("attempt %d: backoff %s outside [1s, %s]", attempt, d, ceil)
			}
			maxSeen = max(maxSeen, d)
		}
		if maxSeen < ceil/2 {
			t.Errorf("attempt %d: max of 200 draws %s, jitter does not span [0, %s]", attempt, maxSeen, ceil)
		}
	}
}
