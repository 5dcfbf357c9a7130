package samstacktest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// A table of one test: moto answers an index query by reading every item of
// the table, and copies the whole table for each item of a
// TransactWriteItems, so a test on a table it shares with the package's
// other tests pays for all of their items. OwnTable gives each test a table
// holding only its own.

var (
	ownMu     sync.Mutex
	ownTables = map[string]string{} // top-level test name -> table name
	ownSeq    atomic.Int64
)

// OwnTable returns the name of a table with the layout of the table like
// (keys, attributes, indexes and their projections, as DescribeTable gives
// them; e.g. a deployed stack's ledger table) on cfg's DynamoDB, created
// for t's top-level test: every call from that test and its subtests gets
// the same table, and another test another table. The table is deleted
// when the top-level test ends (if it asked first).
func OwnTable(t testing.TB, cfg aws.Config, like string) string {
	t.Helper()
	root, _, _ := strings.Cut(t.Name(), "/")
	ownMu.Lock()
	defer ownMu.Unlock()
	if name, ok := ownTables[root]; ok {
		return name
	}
	ctx := context.Background()
	client := dynamodb.NewFromConfig(cfg)
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(like)})
	if err != nil {
		t.Fatalf("the layout of table %s: %v", like, err)
	}
	src := desc.Table
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(fmt.Sprintf("%s%s%d", like, ownSuffix, ownSeq.Add(1))),
		AttributeDefinitions: src.AttributeDefinitions,
		KeySchema:            src.KeySchema,
		BillingMode:          types.BillingModePayPerRequest,
	}
	for _, g := range src.GlobalSecondaryIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection})
	}
	if err := CreateTable(ctx, client, in); err != nil {
		t.Fatalf("create table %s: %v", aws.ToString(in.TableName), err)
	}
	name := aws.ToString(in.TableName)
	ownTables[root] = name
	if t.Name() == root {
		t.Cleanup(func() {
			ownMu.Lock()
			delete(ownTables, root)
			ownMu.Unlock()
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		})
	}
	return name
}

// ownSuffix ends the name of a test's own copy of a stack resource, before
// its number.
const ownSuffix = "-own-"

// OwnQueue creates a queue of t's own that stands for the stack's queue
// like (its URL), with like's visibility timeout, and returns its URL. It
// is deleted when t ends.
func OwnQueue(t testing.TB, cfg aws.Config, like string) string {
	t.Helper()
	ctx := context.Background()
	q := sqs.NewFromConfig(cfg)
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(like),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout}})
	if err != nil {
		t.Fatalf("the queue %s: %v", like, err)
	}
	name := fmt.Sprintf("%s%s%d", like[strings.LastIndexByte(like, '/')+1:], ownSuffix, ownSeq.Add(1))
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout): attrs.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)]}})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
	return aws.ToString(out.QueueUrl)
}

// Like is the name of the stack resource a test's own table or queue
// (OwnTable, OwnQueue) stands for, or "" for any other name: what the
// function's policy names (iamcheck.Names.Own).
func Like(name string) string {
	i := strings.LastIndex(name, ownSuffix)
	if i < 0 {
		return ""
	}
	for _, c := range name[i+len(ownSuffix):] {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return name[:i]
}
