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

	inputsOnce sync.Once
	inputs     map[string]*dynamodb.CreateTableInput
	inputsErr  error
)

// OwnTable returns the name of a table created from template.yaml's
// resource logicalID (e.g. "LedgerTable", with its indexes) on cfg's
// DynamoDB for t's top-level test: every call from that test and its
// subtests gets the same table, and another test another table. The
// table is deleted when the top-level test ends (if it asked first). The
// template is translated once per process.
func OwnTable(t testing.TB, cfg aws.Config, logicalID string) string {
	t.Helper()
	root, _, _ := strings.Cut(t.Name(), "/")
	ownMu.Lock()
	defer ownMu.Unlock()
	if name, ok := ownTables[root]; ok {
		return name
	}
	ctx := context.Background()
	inputsOnce.Do(func() {
		tmpl, err := Template()
		if err != nil {
			inputsErr = err
			return
		}
		inputs, inputsErr = TableInputs(ctx, tmpl, cfg.Region, map[string]string{"Stage": "own"})
	})
	if inputsErr != nil {
		t.Fatal(inputsErr)
	}
	in, ok := inputs[logicalID]
	if !ok {
		t.Fatalf("template.yaml has no table %s", logicalID)
	}
	cp := *in
	cp.TableName = aws.String(fmt.Sprintf("%s-%d", aws.ToString(in.TableName), ownSeq.Add(1)))
	client := dynamodb.NewFromConfig(cfg)
	if _, err := client.CreateTable(ctx, &cp); err != nil {
		t.Fatalf("create table %s: %v", aws.ToString(cp.TableName), err)
	}
	ownTables[root] = aws.ToString(cp.TableName)
	if t.Name() == root {
		t.Cleanup(func() {
			ownMu.Lock()
			delete(ownTables, root)
			ownMu.Unlock()
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: cp.TableName})
		})
	}
	return aws.ToString(cp.TableName)
}
