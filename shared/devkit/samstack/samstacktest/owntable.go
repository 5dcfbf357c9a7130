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
		TableName:            aws.String(fmt.Sprintf("%s-own-%d", like, ownSeq.Add(1))),
		AttributeDefinitions: src.AttributeDefinitions,
		KeySchema:            src.KeySchema,
		BillingMode:          types.BillingModePayPerRequest,
	}
	for _, g := range src.GlobalSecondaryIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection})
	}
	if _, err := client.CreateTable(ctx, in); err != nil {
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
