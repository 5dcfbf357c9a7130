package iamcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/daybook-dev/daybook/shared/awsclient"
)

const (
	testAccount = "123456789012"
	testTable   = "daybook-t-ledger"
	tableARN    = "arn:aws:dynamodb:us-east-1:123456789012:table/daybook-t-ledger"
)

// testPolicies knows the ledger table's keys, as a translated template
// would say them, and nothing else.
func testPolicies() *Policies {
	return &Policies{dep: Deployment{Account: testAccount, Region: "us-east-1", Partition: "aws", Params: map[string]string{"Stage": "t"}},
		tables: map[string]table{testTable: {hashKey: "pk", indexes: map[string]string{"due": "due_account"}}}}
}

// recorder is an endpoint that keeps every call the SDK sends and answers
// each with an empty success: the calls are what the SDK really sends.
type recorder struct {
	mu    sync.Mutex
	calls []Call
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.calls = append(r.calls, Call{Method: req.Method, URL: req.URL, Header: req.Header.Clone(), Body: body})
	r.mu.Unlock()
	if strings.Contains(req.Header.Get("Content-Type"), "json") {
		_, _ = w.Write([]byte("{}"))
	}
}

func (r *recorder) take(t *testing.T) Call {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		t.Fatal("no call recorded")
	}
	c := r.calls[len(r.calls)-1]
	r.calls = nil
	return c
}

func recordingConfig(t *testing.T) (aws.Config, *recorder) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(DefaultKey, "secret", "")}, rec
}

// checks authorizes the call rec recorded last.
func checks(t *testing.T, p *Policies, rec *recorder) []Check {
	t.Helper()
	c := rec.take(t)
	s, err := SignerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	if s.AccessKey != DefaultKey || s.Region != "us-east-1" {
		t.Errorf("signer %+v", s)
	}
	a, err := p.Authorize(c, s, Names{})
	if err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.URL, err)
	}
	return a.Checks
}

func show(cs []Check) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Request.String()+" ["+c.Prefix+"]")
	}
	return strings.Join(out, "\n")
}

func key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk}}
}

// TestDynamoDBRequests: what IAM sees of the DynamoDB calls the SDK sends
// (built with the expression builder, as the ledger builds them).
func TestDynamoDBRequests(t *testing.T) {
	cfg, rec := recordingConfig(t)
	db := dynamodb.NewFromConfig(cfg)
	p := testPolicies()
	ctx := context.Background()
	tbl := aws.String(testTable)

	upd := expression.Set(expression.Name("fleet_key"), expression.Value("W#x")).Add(expression.Name("wake_seq"), expression.Value(1))
	cond := expression.AttributeExists(expression.Name("fleet_shard"))
	ex, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("ACCOUNTS", "acct_a"), UpdateExpression: ex.Update(),
		ConditionExpression: ex.Condition(), ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(), ReturnValues: ddbtypes.ReturnValueUpdatedOld})
	want := []string{"dynamodb:UpdateItem on " + tableARN + " with dynamodb:Attributes=[fleet_key fleet_shard pk sk wake_seq], dynamodb:LeadingKeys=[ACCOUNTS], dynamodb:ReturnValues=[UPDATED_OLD] [ACCOUNTS]"}
	if got := show(checks(t, p, rec)); got != strings.Join(want, "\n") {
		t.Errorf("UpdateItem:\n got %s\nwant %s", got, want[0])
	}

	// Bare names and nested paths in an expression: top-level names only.
	_, _ = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("P#acct_a#events", "2026-03-05"),
		UpdateExpression:          aws.String("SET #d.#x = :v, attempts = attempts + :one REMOVE due_key, stats[2]"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND size (claim_token) > :zero AND #s IN (:a, :b)"),
		ExpressionAttributeNames:  map[string]string{"#d": "doc", "#x": "x", "#s": "state"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberS{Value: "v"}}})
	if got := show(checks(t, p, rec)); got != "dynamodb:UpdateItem on "+tableARN+" with dynamodb:Attributes=[attempts claim_token doc due_key pk sk state stats], dynamodb:LeadingKeys=[P#acct_a#events] [P#]" {
		t.Errorf("UpdateItem with bare names: %s", got)
	}

	_, _ = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: "SCHEMAS"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "acct#events"}, "schema": &ddbtypes.AttributeValueMemberS{Value: "{}"}},
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if got := show(checks(t, p, rec)); got != "dynamodb:PutItem on "+tableARN+" with dynamodb:Attributes=[pk schema sk], dynamodb:LeadingKeys=[SCHEMAS] [SCHEMAS]" {
		t.Errorf("PutItem: %s", got)
	}

	_, _ = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("ACCOUNTS", "acct_a"), ConsistentRead: aws.Bool(true)})
	if got := show(checks(t, p, rec)); got != "dynamodb:GetItem on "+tableARN+" with dynamodb:Attributes=[* pk sk], dynamodb:LeadingKeys=[ACCOUNTS] [ACCOUNTS]" {
		t.Errorf("GetItem of the whole item: %s", got)
	}

	kc, err := expression.NewBuilder().WithKeyCondition(expression.Key("due_account").Equal(expression.Value("W#03")).
		And(expression.Key("due_key").LessThanEqual(expression.Value("2026")))).WithProjection(expression.NamesList(expression.Name("account_id"))).Build()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = db.Query(ctx, &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("due"), KeyConditionExpression: kc.KeyCondition(),
		ProjectionExpression: kc.Projection(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values()})
	if got := show(checks(t, p, rec)); got != "dynamodb:Query on "+tableARN+"/index/due with dynamodb:Attributes=[account_id due_account due_key], dynamodb:LeadingKeys=[W#03] [W#]" {
		t.Errorf("Query of an index: %s", got)
	}

	_, _ = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: tbl, Item: key("AE#acct_a", "2026#1")}},
		{Update: &ddbtypes.Update{TableName: tbl, Key: key("ACCOUNTS", "acct_a"), UpdateExpression: aws.String("SET #e = :e"),
			ExpressionAttributeNames: map[string]string{"#e": "enabled"}, ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberBOOL{Value: true}}}},
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: tbl, Key: key("GUARDS", "s3#b#p"), ConditionExpression: aws.String("attribute_exists(pk)")}},
	}})
	got := show(checks(t, p, rec))
	for _, w := range []string{
		"dynamodb:PutItem on " + tableARN + " with dynamodb:Attributes=[pk sk], dynamodb:EnclosingOperation=[TransactWriteItems], dynamodb:LeadingKeys=[AE#acct_a] [AE#]",
		"dynamodb:UpdateItem on " + tableARN + " with dynamodb:Attributes=[enabled pk sk], dynamodb:EnclosingOperation=[TransactWriteItems], dynamodb:LeadingKeys=[ACCOUNTS] [ACCOUNTS]",
		"dynamodb:ConditionCheckItem on " + tableARN + " with dynamodb:Attributes=[pk sk], dynamodb:EnclosingOperation=[TransactWriteItems], dynamodb:LeadingKeys=[GUARDS] [GUARDS]",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("TransactWriteItems:\n%s\nlacks %s", got, w)
		}
	}

	_, _ = db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{testTable: {
		{PutRequest: &ddbtypes.PutRequest{Item: key("P#a#events", "2026-03-05")}}, {DeleteRequest: &ddbtypes.DeleteRequest{Key: key("H#a#events#2026-03-05", "1")}}}}})
	if got := show(checks(t, p, rec)); got != "dynamodb:BatchWriteItem on "+tableARN+" with dynamodb:Attributes=[pk sk], dynamodb:LeadingKeys=[H#a#events#2026-03-05 P#a#events] [H#,P#]" {
		t.Errorf("BatchWriteItem: %s", got)
	}

	// A legacy parameter is refused, not guessed at.
	_, _ = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("P#a", "d"), AttributeUpdates: map[string]ddbtypes.AttributeValueUpdate{
		"doc": {Action: ddbtypes.AttributeActionPut, Value: &ddbtypes.AttributeValueMemberS{Value: "x"}}}})
	c := rec.take(t)
	s, _ := SignerOf(c)
	if _, err := p.Authorize(c, s, Names{}); err == nil || !strings.Contains(err.Error(), "legacy") {
		t.Errorf("AttributeUpdates: %v", err)
	}
}

// TestS3Requests: each S3 operation the functions use, path-style as
// awsclient builds the client, as the IAM action and resource it needs.
func TestS3Requests(t *testing.T) {
	cfg, rec := recordingConfig(t)
	c := awsclient.NewS3(cfg)
	p := testPolicies()
	ctx := context.Background()
	b, k := aws.String("daybook-exports-a"), aws.String("daybook/acct/v1/events/dt=2026-03-05/part 1.parquet")
	obj := "arn:aws:s3:::daybook-exports-a/daybook/acct/v1/events/dt=2026-03-05/part 1.parquet"
	bucket := "arn:aws:s3:::daybook-exports-a"
	owner := " with s3:ResourceAccount=[123456789012]"
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"put", func() { _, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x")}) }, "s3:PutObject on " + obj + owner + " [object]"},
		{"get", func() { _, _ = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k}) }, "s3:GetObject on " + obj + owner + " [object]"},
		{"head", func() { _, _ = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k}) }, "s3:GetObject on " + obj + owner + " [object]"},
		{"delete", func() { _, _ = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k}) }, "s3:DeleteObject on " + obj + owner + " [object]"},
		{"list", func() { _, _ = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("daybook/")}) }, "s3:ListBucket on " + bucket + owner + " [bucket]"},
		{"list uploads", func() { _, _ = c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b}) }, "s3:ListBucketMultipartUploads on " + bucket + owner + " [bucket]"},
		{"create upload", func() { _, _ = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k}) }, "s3:PutObject on " + obj + owner + " [object]"},
		{"upload part", func() {
			_, _ = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: aws.String("u"), PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
		}, "s3:PutObject on " + obj + owner + " [object]"},
		{"complete", func() {
			_, _ = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: aws.String("u"),
				MultipartUpload: &s3types.CompletedMultipartUpload{Parts: []s3types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String("e")}}}})
		}, "s3:PutObject on " + obj + owner + " [object]"},
		{"abort", func() {
			_, _ = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: aws.String("u")})
		}, "s3:AbortMultipartUpload on " + obj + owner + " [object]"},
		{"delete many", func() {
			_, _ = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("a/1")}, {Key: aws.String("a/2")}}}})
		}, "s3:DeleteObject on " + bucket + "/a/1" + owner + " [object]\ns3:DeleteObject on " + bucket + "/a/2" + owner + " [object]"},
		// The tags and ACL a new object is written with are their own
		// actions on it.
		{"put with tags", func() {
			_, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x"), Tagging: aws.String("retention=7y")})
		}, "s3:PutObject on " + obj + owner + " [object]\ns3:PutObjectTagging on " + obj + owner + " [object]"},
		{"put with a canned ACL", func() {
			_, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x"), ACL: s3types.ObjectCannedACLBucketOwnerFullControl})
		}, "s3:PutObject on " + obj + owner + " [object]\ns3:PutObjectAcl on " + obj + owner + " [object]"},
		{"put with a grant", func() {
			_, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x"), GrantFullControl: aws.String("id=0123abcd")})
		}, "s3:PutObject on " + obj + owner + " [object]\ns3:PutObjectAcl on " + obj + owner + " [object]"},
		{"put with tags and an ACL", func() {
			_, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x"), Tagging: aws.String("retention=7y"),
				ACL: s3types.ObjectCannedACLBucketOwnerFullControl})
		}, "s3:PutObject on " + obj + owner + " [object]\ns3:PutObjectTagging on " + obj + owner + " [object]\ns3:PutObjectAcl on " + obj + owner + " [object]"},
		{"create upload with tags", func() {
			_, _ = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, Tagging: aws.String("retention=7y")})
		}, "s3:PutObject on " + obj + owner + " [object]\ns3:PutObjectTagging on " + obj + owner + " [object]"},
		{"create upload with a canned ACL", func() {
			_, _ = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ACL: s3types.ObjectCannedACLBucketOwnerFullControl})
		}, "s3:PutObject on " + obj + owner + " [object]\ns3:PutObjectAcl on " + obj + owner + " [object]"},
		{"create upload with a grant", func() {
			_, _ = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, GrantRead: aws.String("id=0123abcd")})
		}, "s3:PutObject on " + obj + owner + " [object]\ns3:PutObjectAcl on " + obj + owner + " [object]"},
		{"copy", func() {
			_, _ = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("dst"), CopySource: aws.String("other/src%20key")})
		}, "s3:GetObject on arn:aws:s3:::other/src key" + owner + " [object]\ns3:PutObject on " + bucket + "/dst" + owner + " [object]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.call()
			if got := show(checks(t, p, rec)); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	// A bucket of another account says so.
	_, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("x")})
	call := rec.take(t)
	s, _ := SignerOf(call)
	a, err := p.Authorize(call, s, Names{BucketAccount: func(string) string { return "210987654321" }})
	if err != nil || fmt.Sprint(a.Checks[0].Context["s3:ResourceAccount"]) != "[210987654321]" {
		t.Errorf("another account's bucket: %+v %v", a, err)
	}
	// A copy that sets tags or an ACL is refused: its directives decide
	// what it sets.
	_, _ = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("dst"), CopySource: aws.String("other/src"),
		TaggingDirective: s3types.TaggingDirectiveReplace, Tagging: aws.String("retention=7y")})
	call = rec.take(t)
	if _, err := p.Authorize(call, s, Names{}); !errors.Is(err, ErrNotUnderstood) {
		t.Errorf("a copy with tags: %v, want %v", err, ErrNotUnderstood)
	}
	// An operation iamcheck does not know is refused.
	_, _ = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String("{}")})
	call = rec.take(t)
	if _, err := p.Authorize(call, s, Names{}); err == nil {
		t.Error("PutBucketPolicy was classified")
	}
}

// TestOtherRequests: SQS, EventBridge, STS, Glue, SSM and Secrets Manager calls as IAM
// authorizes them.
func TestOtherRequests(t *testing.T) {
	cfg, rec := recordingConfig(t)
	p := testPolicies()
	ctx := context.Background()
	q := sqs.NewFromConfig(cfg)
	queueURL := "https://sqs.us-east-1.amazonaws.com/123456789012/daybook-t-jobs"
	eb := eventbridge.NewFromConfig(cfg)
	st := sts.NewFromConfig(cfg)
	g := glue.NewFromConfig(cfg)
	sm := ssm.NewFromConfig(cfg)
	secrets := secretsmanager.NewFromConfig(cfg)
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"send", func() {
			_, _ = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: aws.String("{}")})
		},
			"sqs:SendMessage on arn:aws:sqs:us-east-1:123456789012:daybook-t-jobs [queue jobs]"},
		{"send batch", func() {
			_, _ = q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &queueURL, Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("1"), MessageBody: aws.String("{}")}}})
		}, "sqs:SendMessage on arn:aws:sqs:us-east-1:123456789012:daybook-t-jobs [queue jobs]"},
		{"attributes", func() { _, _ = q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &queueURL}) },
			"sqs:GetQueueAttributes on arn:aws:sqs:us-east-1:123456789012:daybook-t-jobs [queue jobs]"},
		{"events", func() {
			_, _ = eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
				{EventBusName: aws.String("daybook-t"), Source: aws.String("daybook"), DetailType: aws.String("x"), Detail: aws.String("{}")},
				{EventBusName: aws.String("daybook-t"), Source: aws.String("daybook"), DetailType: aws.String("y"), Detail: aws.String("{}")}}})
		}, "events:PutEvents on arn:aws:events:us-east-1:123456789012:event-bus/daybook-t [event-bus]"},
		{"assume role", func() {
			_, _ = st.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::210987654321:role/daybook-export-a"), RoleSessionName: aws.String("s"), ExternalId: aws.String("x")})
		}, "sts:AssumeRole on arn:aws:iam::210987654321:role/daybook-export-a with sts:ExternalId=[x] [role]"},
		{"caller identity", func() { _, _ = st.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}) }, ""},
		{"glue table", func() {
			_, _ = g.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String("db"), Name: aws.String("events")})
		},
			"glue:GetTable on arn:aws:glue:us-east-1:123456789012:catalog [catalog]\nglue:GetTable on arn:aws:glue:us-east-1:123456789012:database/db [database]\nglue:GetTable on arn:aws:glue:us-east-1:123456789012:table/db/events [table]"},
		{"glue create", func() {
			_, _ = g.CreateTable(ctx, &glue.CreateTableInput{DatabaseName: aws.String("db"), TableInput: &gluetypes.TableInput{Name: aws.String("events")}})
		}, "glue:CreateTable on arn:aws:glue:us-east-1:123456789012:catalog [catalog]\nglue:CreateTable on arn:aws:glue:us-east-1:123456789012:database/db [database]\nglue:CreateTable on arn:aws:glue:us-east-1:123456789012:table/db/events [table]"},
		{"parameter", func() {
			_, _ = sm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/daybook/source-dsn"), WithDecryption: aws.Bool(true)})
		}, "ssm:GetParameter on arn:aws:ssm:us-east-1:123456789012:parameter/daybook/source-dsn [parameter]"},
		{"web identity token", func() {
			_, _ = st.GetWebIdentityToken(ctx, &sts.GetWebIdentityTokenInput{Audience: []string{"api://AzureADTokenExchange"}, SigningAlgorithm: aws.String("RS256"), DurationSeconds: aws.Int32(300)})
		}, "sts:GetWebIdentityToken on * with sts:DurationSeconds=[300], sts:IdentityTokenAudience=[api://AzureADTokenExchange], sts:SigningAlgorithm=[RS256] [token]"},
		{"web identity token, default lifetime", func() {
			_, _ = st.GetWebIdentityToken(ctx, &sts.GetWebIdentityTokenInput{Audience: []string{"a", "b"}, SigningAlgorithm: aws.String("ES384")})
		}, "sts:GetWebIdentityToken on * with sts:DurationSeconds=[300], sts:IdentityTokenAudience=[a b], sts:SigningAlgorithm=[ES384] [token]"},
		{"secret", func() {
			_, _ = secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/acme-AbCdEf")})
		}, "secretsmanager:GetSecretValue on arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/acme-AbCdEf [secret]"},
		{"secret by name", func() {
			_, _ = secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("daybook/destinations/acme")})
		}, "secretsmanager:GetSecretValue on arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/acme [secret]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.call()
			if got := show(checks(t, p, rec)); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestSignerOf: the access key, region and service of a SigV4 call; an
// unsigned call is an error.
func TestSignerOf(t *testing.T) {
	u, _ := url.Parse("/")
	h := http.Header{"Authorization": {"AWS4-HMAC-SHA256 Credential=ASIAXYZ/20261206/eu-west-1/s3/aws4_request, SignedHeaders=host, Signature=abc"}}
	s, err := SignerOf(Call{Method: "GET", URL: u, Header: h})
	if err != nil || s != (Signer{AccessKey: "ASIAXYZ", Region: "eu-west-1", Service: "s3"}) {
		t.Errorf("SignerOf = %+v, %v", s, err)
	}
	if _, err := SignerOf(Call{Method: "GET", URL: u, Header: http.Header{}, Body: bytes.NewBufferString("").Bytes()}); err == nil {
		t.Error("an unsigned call has a signer")
	}
	if !slices.Equal(subresources(url.Values{"x-id": {"GetObject"}, "list-type": {"2"}}), nil) {
		t.Error("x-id and list-type are not sub-resources")
	}
}
