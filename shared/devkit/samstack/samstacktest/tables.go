package samstacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

// cfnTable is the part of an AWS::DynamoDB::Table resource's properties a
// table is created from.
type cfnTable struct {
	TableName            any
	BillingMode          types.BillingMode
	AttributeDefinitions []struct {
		AttributeName string
		AttributeType types.ScalarAttributeType
	}
	KeySchema              []cfnKey
	GlobalSecondaryIndexes []struct {
		IndexName  string
		KeySchema  []cfnKey
		Projection struct {
			ProjectionType   types.ProjectionType
			NonKeyAttributes []string
		}
	}
}

type cfnKey struct {
	AttributeName string
	KeyType       types.KeyType
}

// TableInputs translates the template like samstack.Deploy and returns a CreateTable
// input for each AWS::DynamoDB::Table resource, by logical id, with
// ${Param} in its name resolved from params: for an emulator that has
// DynamoDB but no CloudFormation (the fleet benchmark's). Keys, attribute
// definitions, indexes and projections are the template's; encryption,
// recovery and TTL settings are not carried.
func TableInputs(ctx context.Context, templatePath, region string, params map[string]string) (map[string]*dynamodb.CreateTableInput, error) {
	body, err := samstack.Translate(ctx, templatePath, region)
	if err != nil {
		return nil, err
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &tmpl); err != nil {
		return nil, fmt.Errorf("translated template: %w", err)
	}
	out := map[string]*dynamodb.CreateTableInput{}
	for id, r := range tmpl.Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		var t cfnTable
		if err := json.Unmarshal(r.Properties, &t); err != nil {
			return nil, fmt.Errorf("table %s: %w", id, err)
		}
		name, err := resolveName(t.TableName, params)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", id, err)
		}
		in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: t.BillingMode, KeySchema: keys(t.KeySchema)}
		for _, a := range t.AttributeDefinitions {
			in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(a.AttributeName), AttributeType: a.AttributeType})
		}
		for _, g := range t.GlobalSecondaryIndexes {
			in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
				IndexName: aws.String(g.IndexName), KeySchema: keys(g.KeySchema),
				Projection: &types.Projection{ProjectionType: g.Projection.ProjectionType, NonKeyAttributes: g.Projection.NonKeyAttributes},
			})
		}
		out[id] = in
	}
	return out, nil
}

func keys(ks []cfnKey) []types.KeySchemaElement {
	var out []types.KeySchemaElement
	for _, k := range ks {
		out = append(out, types.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: k.KeyType})
	}
	return out
}

var subRE = regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}`)

// resolveName reads a TableName that is a string or {"Fn::Sub": "..."}.
func resolveName(v any, params map[string]string) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case map[string]any:
		if s, ok := v["Fn::Sub"].(string); ok {
			var missing []string
			name := subRE.ReplaceAllStringFunc(s, func(m string) string {
				p := subRE.FindStringSubmatch(m)[1]
				if val, ok := params[p]; ok {
					return val
				}
				missing = append(missing, p)
				return m
			})
			if len(missing) > 0 {
				sort.Strings(missing)
				return "", fmt.Errorf("TableName %q: no value for %v", s, missing)
			}
			return name, nil
		}
	}
	return "", fmt.Errorf("TableName %v: want a string or Fn::Sub", v)
}

// CreateTables creates the template's tables (TableInputs) through client
// and waits until each is ACTIVE. It returns the table names by logical id.
func CreateTables(ctx context.Context, client *dynamodb.Client, templatePath, region string, params map[string]string) (map[string]string, error) {
	ins, err := TableInputs(ctx, templatePath, region, params)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for id, in := range ins {
		if err := CreateTable(ctx, client, in); err != nil {
			return nil, fmt.Errorf("create table %s: %w", aws.ToString(in.TableName), err)
		}
		w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 50 * time.Millisecond
			o.MaxDelay = time.Second
		})
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, time.Minute); err != nil {
			return nil, fmt.Errorf("table %s: %w", aws.ToString(in.TableName), err)
		}
		names[id] = aws.ToString(in.TableName)
	}
	return names, nil
}
