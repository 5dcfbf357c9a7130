package ledger

// Delivered schemas: what the deployment has delivered of each
// dataset, one small item per dataset and contract, so a catalog can be
// checked against it (daybook catalog diff --deployed) without reading any
// customer's bucket:
//
//	pk=SCHEMAS, sk=<dataset>#<contract>   dataset, contract, version,
//	                                      schema_doc (the _schemas/<dataset>.json
//	                                      document, JSON), schema_sha256, updated_at
//
// The document is a pure function of the catalog's declaration, the same
// for every account, so one item per deployment (the table) holds it. The
// exporter writes it after a commit only when its SHA-256 differs from the
// stored one (RecordSchema is conditional on that), and remembers what it
// found, so a warm exporter reads it once per dataset and writes it once
// per schema change.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const (
	pkSchemas      = "SCHEMAS"
	attrContract   = "contract"      // delivered schemas: the layout contract, v1, v2, ...
	attrSchemaDoc  = "schema_doc"    // delivered schemas: the schema document, JSON
	attrSchemaHash = "schema_sha256" // delivered schemas: hex SHA-256 of schema_doc
)

// ErrSchemaInvalid is returned for a DeliveredSchema missing a field.
var ErrSchemaInvalid = errors.New("ledger: invalid delivered schema")

// DeliveredSchema is the schema document of one dataset at one contract,
// as last delivered by this deployment.
type DeliveredSchema struct {
	Dataset  string
	Contract string
	Version  int
	Doc      []byte // the schema document (bucketdocs.Schema)
	SHA256   string // hex SHA-256 of Doc
	// UpdatedAt is when it was recorded (read back only).
	UpdatedAt time.Time
}

// schemaRecord is the stored form of a DeliveredSchema.
type schemaRecord struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	Dataset      string `dynamodbav:"dataset"`
	Contract     string `dynamodbav:"contract"`
	Version      int    `dynamodbav:"version"`
	SchemaDoc    string `dynamodbav:"schema_doc"`
	SchemaSHA256 string `dynamodbav:"schema_sha256"`
	UpdatedAt    string `dynamodbav:"updated_at"`
}

func schemaSK(ds, contract string) string { return ds + "#" + contract }

// RecordSchema stores s unless the stored item for its dataset and contract
// has the same SHA-256; it reports whether it wrote.
func (l Schemas) RecordSchema(ctx context.Context, s DeliveredSchema) (bool, error) {
	if s.Dataset == "" || s.Contract == "" || s.Version < 1 || len(s.Doc) == 0 || s.SHA256 == "" {
		return false, fmt.Errorf("%w: dataset %q, contract %q, version %d, %d bytes, sha256 %q", ErrSchemaInvalid, s.Dataset, s.Contract, s.Version, len(s.Doc), s.SHA256)
	}
	item, err := attributevalue.MarshalMap(schemaRecord{PK: pkSchemas, SK: schemaSK(s.Dataset, s.Contract), Dataset: s.Dataset,
		Contract: s.Contract, Version: s.Version, SchemaDoc: string(s.Doc), SchemaSHA256: s.SHA256, UpdatedAt: fmtTime(l.now())})
	if err != nil {
		return false, fmt.Errorf("ledger: encode delivered schema %s %s: %w", s.Dataset, s.Contract, err)
	}
	cond := name(AttrPK).AttributeNotExists().Or(name(attrSchemaHash).NotEqual(val(s.SHA256)))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return false, fmt.Errorf("ledger: build expression: %w", err)
	}
	_, err = l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.cfg.Table), Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger: record delivered schema %s %s: %w", s.Dataset, s.Contract, err)
	}
	return true, nil
}

// DeliveredSchemaOf reads the recorded schema of dataset at contract, or
// ErrNotFound (eventually consistent: the exporter only compares hashes).
func (l Schemas) DeliveredSchemaOf(ctx context.Context, ds, contract string) (DeliveredSchema, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.cfg.Table), Key: map[string]types.AttributeValue{
		AttrPK: &types.AttributeValueMemberS{Value: pkSchemas}, AttrSK: &types.AttributeValueMemberS{Value: schemaSK(ds, contract)}}})
	if err != nil {
		return DeliveredSchema{}, fmt.Errorf("ledger: read delivered schema %s %s: %w", ds, contract, err)
	}
	if len(out.Item) == 0 {
		return DeliveredSchema{}, fmt.Errorf("delivered schema %s %s: %w", ds, contract, ErrNotFound)
	}
	return decodeSchema(out.Item)
}

// DeliveredSchemas reads every recorded schema, in dataset then contract
// order (one query; a page holds hundreds of them).
func (l Schemas) DeliveredSchemas(ctx context.Context) ([]DeliveredSchema, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(AttrPK).Equal(expression.Value(pkSchemas))).Build()
	if err != nil {
		return nil, fmt.Errorf("ledger: build expression: %w", err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(l.cfg.Table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true)}
	var out []DeliveredSchema
	for {
		page, err := l.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("ledger: read delivered schemas: %w", err)
		}
		for _, it := range page.Items {
			s, err := decodeSchema(it)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func decodeSchema(item map[string]types.AttributeValue) (DeliveredSchema, error) {
	var r schemaRecord
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return DeliveredSchema{}, fmt.Errorf("ledger: decode delivered schema: %w", err)
	}
	at, _ := time.Parse(timeFormat, r.UpdatedAt)
	return DeliveredSchema{Dataset: r.Dataset, Contract: r.Contract, Version: r.Version, Doc: []byte(r.SchemaDoc),
		SHA256: r.SchemaSHA256, UpdatedAt: at}, nil
}
