package samstacktest_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

func tableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
}

func TestCreateTable(t *testing.T) {
	ctx := context.Background()
	direct, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, cut := mototest.LoseFirstAnswer(t, srv.URL, "CreateTable")
	proxied, err := motoserver.ConfigFor(ctx, proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	db := dynamodb.NewFromConfig(proxied)

	// The answer to the attempt that made the table is lost; the SDK's
	// second attempt is refused as in use: the table is the call's own.
	if err := samstacktest.CreateTable(ctx, db, tableInput("cut-answer")); err != nil {
		t.Fatalf("a table whose answer was lost: %v", err)
	}
	if cut.Load() != 1 {
		t.Fatalf("the proxy cut %d answers, want 1", cut.Load())
	}
	if _, err := dynamodb.NewFromConfig(direct).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("cut-answer")}); err != nil {
		t.Fatalf("the table made: %v", err)
	}

	// A table that was there before the call is someone else's: an error.
	var inUse *types.ResourceInUseException
	if err := samstacktest.CreateTable(ctx, db, tableInput("cut-answer")); !errors.As(err, &inUse) {
		t.Fatalf("a second create of the table: %v, want in use", err)
	}
}
