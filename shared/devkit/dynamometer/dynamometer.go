// Package dynamometer is test and benchmark support: a DynamoDB client
// wrapper that counts the requests and items a piece of code costs, by
// operation, and can add a fixed latency to every request, to measure what
// a sweep would take against DynamoDB's own latency on a fast local
// emulator. It also works around emulators that ignore
// ReturnValuesOnConditionCheckFailure (dynalite): production code never
// needs it.
package dynamometer

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client the ledger uses (ledger.DynamoAPI).
type API interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var (
	_ API = (*dynamodb.Client)(nil)
	_ API = (*Client)(nil)
)

// Counts is what was spent: requests by operation, and items (returned by
// GetItem and Query, written by PutItem and UpdateItem).
type Counts struct {
	Requests int            `json:"requests"`
	Items    int            `json:"items"`
	ByOp     map[string]int `json:"by_op"`
}

// Client wraps an API.
type Client struct {
	API API
	// Latency is added to every request (0: none).
	Latency time.Duration
	// ReadBack fills in the item of a ConditionalCheckFailedException that
	// asked for it (ReturnValuesOnConditionCheckFailure ALL_OLD) and came
	// back without one, with a consistent GetItem that is not counted.
	ReadBack bool

	mu sync.Mutex
	c  Counts
}

// Counts returns what was spent since the last Reset.
func (c *Client) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.c
	out.ByOp = maps.Clone(c.c.ByOp)
	return out
}

// Reset zeroes the counts.
func (c *Client) Reset() {
	c.mu.Lock()
	c.c = Counts{}
	c.mu.Unlock()
}

func (c *Client) spend(ctx context.Context, op string, items int) error {
	c.mu.Lock()
	c.c.Requests++
	c.c.Items += items
	if c.c.ByOp == nil {
		c.c.ByOp = map[string]int{}
	}
	c.c.ByOp[op]++
	c.mu.Unlock()
	if c.Latency <= 0 {
		return nil
	}
	t := time.NewTimer(c.Latency)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// GetItem is the client's, counted.
func (c *Client) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.API.GetItem(ctx, in, opts...)
	n := 0
	if err == nil && len(out.Item) > 0 {
		n = 1
	}
	if serr := c.spend(ctx, "GetItem", n); serr != nil {
		return nil, serr
	}
	return out, err
}

// Query is the client's, counted (items returned).
func (c *Client) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.API.Query(ctx, in, opts...)
	n := 0
	if err == nil {
		n = int(out.Count)
	}
	if serr := c.spend(ctx, "Query", n); serr != nil {
		return nil, serr
	}
	return out, err
}

// PutItem is the client's, counted.
func (c *Client) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.API.PutItem(ctx, in, opts...)
	if serr := c.spend(ctx, "PutItem", 1); serr != nil {
		return nil, serr
	}
	if c.ReadBack && in.ReturnValuesOnConditionCheckFailure == types.ReturnValuesOnConditionCheckFailureAllOld {
		err = c.readBack(ctx, in.TableName, keyOf(in.Item, in), err)
	}
	return out, err
}

// UpdateItem is the client's, counted.
func (c *Client) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.API.UpdateItem(ctx, in, opts...)
	if serr := c.spend(ctx, "UpdateItem", 1); serr != nil {
		return nil, serr
	}
	if c.ReadBack && in.ReturnValuesOnConditionCheckFailure == types.ReturnValuesOnConditionCheckFailureAllOld {
		err = c.readBack(ctx, in.TableName, in.Key, err)
	}
	return out, err
}

// TransactWriteItems is the client's, counted (one request, an item per
// write).
func (c *Client) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := c.API.TransactWriteItems(ctx, in, opts...)
	if serr := c.spend(ctx, "TransactWriteItems", len(in.TransactItems)); serr != nil {
		return nil, serr
	}
	return out, err
}

// KeyAttrs are the table's key attribute names, for PutItem read-backs.
var KeyAttrs = []string{"pk", "sk"}

func keyOf(item map[string]types.AttributeValue, _ *dynamodb.PutItemInput) map[string]types.AttributeValue {
	key := map[string]types.AttributeValue{}
	for _, a := range KeyAttrs {
		key[a] = item[a]
	}
	return key
}

func (c *Client) readBack(ctx context.Context, table *string, key map[string]types.AttributeValue, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || len(ccf.Item) > 0 {
		return err
	}
	out, gerr := c.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if gerr == nil {
		ccf.Item = out.Item
	}
	return err
}
