package ledger

// Pages of the fleet view: the summaries of summary.go read FleetShards
// shards at a time, merged by fleet key, with a token that holds where each
// shard stopped.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FleetPage is one page of the fleet view.
type FleetPage struct {
	Summaries []Summary
	// Next is the token of the following page, "" on the last.
	Next  string
	Stats ReadStats
}

// FleetPage reads a page of at most limit summaries, worst first, after
// the page whose Next is token ("" for the first): FleetShards queries of
// at most limit items each, whatever the fleet size.
func (l Fleet) FleetPage(ctx context.Context, token string, limit int) (FleetPage, error) {
	return l.mergedPage(ctx, fleetSummary, "", token, limit)
}

// SearchFleet reads a page of at most limit summaries of accounts whose
// name starts with prefix (any case), by name, after the page whose Next
// is token.
func (l Fleet) SearchFleet(ctx context.Context, prefix, token string, limit int) (FleetPage, error) {
	if prefix == "" {
		return FleetPage{}, fmt.Errorf("ledger: search: empty name prefix")
	}
	return l.mergedPage(ctx, fleetName, strings.ToLower(prefix), token, limit)
}

// pageToken is where each shard's read stopped: the last fleet key taken
// from it, or "" where nothing was taken yet; Done marks shards read to
// their end.
type pageToken struct {
	After map[int]string `json:"a,omitempty"`
	Done  []int          `json:"d,omitempty"`
}

func decodePageToken(tok string) (pageToken, error) {
	var pt pageToken
	if tok == "" {
		return pt, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		err = json.Unmarshal(b, &pt)
	}
	if err != nil {
		return pt, fmt.Errorf("%w: page token %q is not one this ledger returned", ErrBadPageToken, tok)
	}
	return pt, nil
}

// mergedPage merges the FleetShards shards of one kind of fleet entry by
// fleet key: each shard gives its next limit entries (after the token's
// place in it), and the page takes the limit smallest.
func (l *kernel) mergedPage(ctx context.Context, kind, prefix, token string, limit int) (FleetPage, error) {
	var page FleetPage
	if limit <= 0 {
		return page, fmt.Errorf("ledger: fleet page limit %d: want at least 1", limit)
	}
	pt, err := decodePageToken(token)
	if err != nil {
		return page, err
	}
	type entry struct {
		shard int
		key   string
		item  map[string]types.AttributeValue
	}
	var entries []entry
	more := map[int]bool{} // shards with entries past what they returned
	for sh := range FleetShards {
		if slices.Contains(pt.Done, sh) {
			continue
		}
		shard := summaryShard(kind, sh)
		kc := expression.Key(AttrFleetShard).Equal(val(shard))
		if prefix != "" {
			kc = kc.And(expression.Key(AttrFleetKey).BeginsWith(prefix))
		}
		expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
		if err != nil {
			return page, fmt.Errorf("ledger: fleet page: build query: %w", err)
		}
		in := &dynamodb.QueryInput{
			TableName: aws.String(l.cfg.Table), IndexName: aws.String(IndexFleet),
			KeyConditionExpression: expr.KeyCondition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			Limit: aws.Int32(int32(limit)), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		}
		if after := pt.After[sh]; after != "" {
			acct := after[strings.LastIndexByte(after, '#')+1:]
			sk := skSummary
			if kind == fleetName {
				sk = skSummaryName
			}
			in.ExclusiveStartKey = tableKey(summaryPK(acct), sk)
			in.ExclusiveStartKey[AttrFleetShard] = s(shard)
			in.ExclusiveStartKey[AttrFleetKey] = s(after)
		}
		out, err := l.db.Query(ctx, in)
		if err != nil {
			return page, fmt.Errorf("ledger: fleet page of %s: %w", shard, err)
		}
		page.Stats.Queries++
		page.Stats.Items += int(out.ScannedCount)
		if out.ConsumedCapacity != nil {
			page.Stats.CapacityUnits += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
		}
		for _, it := range out.Items {
			entries = append(entries, entry{sh, avString(it[AttrFleetKey]), it})
		}
		more[sh] = len(out.LastEvaluatedKey) > 0
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	next := pageToken{After: map[int]string{}, Done: slices.Clone(pt.Done)}
	for sh, after := range pt.After {
		next.After[sh] = after
	}
	taken := map[int]int{}
	for i, e := range entries {
		if i == limit {
			break
		}
		sum, err := summaryFromItem(e.item)
		if err != nil {
			return page, err
		}
		page.Summaries = append(page.Summaries, sum)
		next.After[e.shard] = e.key
		taken[e.shard]++
	}
	left := false
	for sh, m := range more {
		returned := 0
		for _, e := range entries {
			if e.shard == sh {
				returned++
			}
		}
		if !m && taken[sh] == returned {
			next.Done = append(next.Done, sh)
			delete(next.After, sh)
			continue
		}
		left = true
	}
	if left {
		b, err := json.Marshal(next)
		if err != nil {
			return page, err
		}
		page.Next = base64.RawURLEncoding.EncodeToString(b)
	}
	return page, nil
}
