package iamcheck

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Call is one HTTP request as the SDK sent it to an AWS endpoint.
type Call struct {
	Method string
	URL    *url.URL // path and query (path-style S3: /bucket/key)
	Header http.Header
	Body   []byte
}

// Signer is who signed a call and for what: its SigV4 credential scope.
type Signer struct {
	AccessKey, Region, Service string
}

// SignerOf reads the SigV4 credential scope of c (Authorization header, or
// a presigned URL's X-Amz-Credential); an unsigned call is an error.
func SignerOf(c Call) (Signer, error) {
	cred := ""
	if h := c.Header.Get("Authorization"); h != "" {
		_, rest, ok := strings.Cut(h, "Credential=")
		if !ok {
			return Signer{}, fmt.Errorf("authorization %q is not SigV4", h)
		}
		cred, _, _ = strings.Cut(rest, ",")
	} else {
		cred = c.URL.Query().Get("X-Amz-Credential")
	}
	parts := strings.Split(strings.TrimSpace(cred), "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return Signer{}, fmt.Errorf("unsigned call %s %s (credential %q)", c.Method, c.URL.Path, cred)
	}
	return Signer{AccessKey: parts[0], Region: parts[2], Service: parts[3]}, nil
}

// Authorization is what IAM checks for one call.
type Authorization struct {
	Operation string // "<service> <API operation>", for reports
	Checks    []Check
}

// Check is one authorization of a call, with the key prefix it is tallied
// under: the leading key's prefix for DynamoDB (P#, ACCOUNTS, ...), the
// resource's kind for other services.
type Check struct {
	Request
	Prefix string
}

// ErrNotUnderstood is wrapped by the errors of a call Authorize cannot
// classify: a test that makes one fails (a check that cannot say is never
// a pass).
var ErrNotUnderstood = errors.New("iamcheck: call not understood")

// Names says what a test's resources stand for where they are not the
// deployment's own.
type Names struct {
	// BucketAccount is the account that owns a bucket (s3:ResourceAccount);
	// nil: the deployment's.
	BucketAccount func(bucket string) string
	// Own is the name of the template's table or queue a test's own one
	// stands for (samstacktest.Like: a test that runs on a copy of the
	// ledger table or of the jobs queue); nil, or "", keeps the name.
	Own func(name string) string
}

// Authorize turns a call signed for region and service into the
// authorizations IAM makes for it, in the deployment's account.
func (p *Policies) Authorize(c Call, s Signer, n Names) (Authorization, error) {
	a := authorizer{p: p, c: c, s: s, account: p.dep.Account, partition: p.dep.Partition, bucketAccount: n.BucketAccount, own: n.Own}
	if a.bucketAccount == nil {
		a.bucketAccount = func(string) string { return p.dep.Account }
	}
	var err error
	switch s.Service {
	case "dynamodb":
		err = a.dynamo()
	case "s3":
		err = a.s3()
	case "sqs":
		err = a.sqs()
	case "events":
		err = a.events()
	case "sts":
		err = a.sts()
	case "glue":
		err = a.glue()
	case "ssm":
		err = a.ssm()
	case "secretsmanager":
		err = a.secretsManager()
	default:
		err = fmt.Errorf("%w: service %s (%s %s)", ErrNotUnderstood, s.Service, c.Method, c.URL.Path)
	}
	return a.out, err
}

type authorizer struct {
	p             *Policies
	c             Call
	s             Signer
	account       string
	partition     string
	bucketAccount func(string) string
	own           func(string) string
	out           Authorization
}

func (a *authorizer) add(action, resource, prefix string, ctx map[string][]string) {
	a.out.Checks = append(a.out.Checks, Check{Request: Request{Action: action, Resource: resource, Context: ctx}, Prefix: prefix})
}

func (a *authorizer) arn(service, region, account, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", a.partition, service, region, account, resource)
}

// target is the operation of a JSON-protocol call (X-Amz-Target
// "<prefix>.<Operation>"), and its body decoded into v.
func (a *authorizer) target(v any) (string, error) {
	t := a.c.Header.Get("X-Amz-Target")
	_, op, ok := strings.Cut(t, ".")
	if !ok {
		return "", fmt.Errorf("%w: %s call without X-Amz-Target", ErrNotUnderstood, a.s.Service)
	}
	a.out.Operation = a.s.Service + " " + op
	if err := json.Unmarshal(a.c.Body, v); err != nil {
		return "", fmt.Errorf("%w: %s body: %v", ErrNotUnderstood, a.out.Operation, err)
	}
	return op, nil
}

// ---- SQS (JSON protocol) ----

func (a *authorizer) sqs() error {
	var in struct {
		QueueURL               string `json:"QueueUrl"`
		QueueName              string
		QueueOwnerAWSAccountID string `json:"QueueOwnerAWSAccountId"`
	}
	op, err := a.target(&in)
	if err != nil {
		return err
	}
	action := "sqs:" + strings.TrimSuffix(op, "Batch")
	switch op {
	case "ListQueues":
		a.add(action, "*", "queues", nil)
		return nil
	case "GetQueueUrl":
		owner := in.QueueOwnerAWSAccountID
		if owner == "" {
			owner = a.account
		}
		a.add(action, a.arn("sqs", a.s.Region, owner, in.QueueName), queueKind(in.QueueName, a.p), nil)
		return nil
	}
	u, err := url.Parse(in.QueueURL)
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if err != nil || len(parts) != 2 {
		return fmt.Errorf("%w: %s QueueUrl %q", ErrNotUnderstood, a.out.Operation, in.QueueURL)
	}
	name := a.ownName(parts[1])
	a.add(action, a.arn("sqs", a.s.Region, parts[0], name), queueKind(name, a.p), nil)
	return nil
}

// ownName is the template's name of a test's own resource name (Names.Own).
func (a *authorizer) ownName(name string) string {
	if a.own != nil {
		if n := a.own(name); n != "" {
			return n
		}
	}
	return name
}

// queueKind names a queue by its template role (jobs, jobs-dlq, sweep,
// sweeper-dlq): its name without the stage.
func queueKind(name string, p *Policies) string {
	prefix := "daybook-" + p.dep.Params["Stage"] + "-"
	if k, ok := strings.CutPrefix(name, prefix); ok {
		return "queue " + k
	}
	return "queue " + name
}

// ---- EventBridge ----

func (a *authorizer) events() error {
	var in struct {
		Entries []struct{ EventBusName, Source, DetailType string }
	}
	op, err := a.target(&in)
	if err != nil {
		return err
	}
	if op != "PutEvents" {
		return fmt.Errorf("%w: %s", ErrNotUnderstood, a.out.Operation)
	}
	var buses []string
	for _, e := range in.Entries {
		b := e.EventBusName
		if b == "" {
			b = "default"
		}
		if !strings.HasPrefix(b, "arn:") {
			b = a.arn("events", a.s.Region, a.account, "event-bus/"+b)
		}
		buses = append(buses, b)
	}
	slices.Sort(buses)
	for _, b := range slices.Compact(buses) {
		a.add("events:PutEvents", b, "event-bus", nil)
	}
	return nil
}

// ---- STS (query protocol) ----

func (a *authorizer) sts() error {
	form, err := url.ParseQuery(string(a.c.Body))
	if err != nil {
		return fmt.Errorf("%w: sts body: %v", ErrNotUnderstood, err)
	}
	op := form.Get("Action")
	a.out.Operation = "sts " + op
	switch op {
	case "GetCallerIdentity":
		// Needs no permission: every principal may ask who it is.
	case "AssumeRole":
		ctx := map[string][]string{}
		if id := form.Get("ExternalId"); id != "" {
			ctx["sts:ExternalId"] = []string{id}
		}
		a.add("sts:AssumeRole", form.Get("RoleArn"), "role", ctx)
	case "GetWebIdentityToken":
		// Outbound identity federation: IAM's condition keys are the
		// token's audiences, its lifetime (300 s when not asked) and its
		// signing algorithm.
		// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_iam-condition-keys.html#ck_identitytokenaudience
		ctx := map[string][]string{"sts:DurationSeconds": {"300"}}
		if v := form.Get("DurationSeconds"); v != "" {
			ctx["sts:DurationSeconds"] = []string{v}
		}
		for i := 1; form.Has(fmt.Sprintf("Audience.member.%d", i)); i++ {
			ctx["sts:IdentityTokenAudience"] = append(ctx["sts:IdentityTokenAudience"], form.Get(fmt.Sprintf("Audience.member.%d", i)))
		}
		if v := form.Get("SigningAlgorithm"); v != "" {
			ctx["sts:SigningAlgorithm"] = []string{v}
		}
		a.add("sts:GetWebIdentityToken", "*", "token", ctx)
	default:
		return fmt.Errorf("%w: %s", ErrNotUnderstood, a.out.Operation)
	}
	return nil
}

// ---- Glue ----

func (a *authorizer) glue() error {
	var in struct {
		CatalogID    string `json:"CatalogId"`
		DatabaseName string
		Name         string
		TableInput   struct{ Name string }
	}
	op, err := a.target(&in)
	if err != nil {
		return err
	}
	account := in.CatalogID
	if account == "" {
		account = a.account
	}
	catalog := a.arn("glue", a.s.Region, account, "catalog")
	database := func(db string) string { return a.arn("glue", a.s.Region, account, "database/"+db) }
	tableARN := func(db, t string) string { return a.arn("glue", a.s.Region, account, "table/"+db+"/"+t) }
	action := "glue:" + op
	switch op {
	case "GetDatabase", "CreateDatabase", "UpdateDatabase", "DeleteDatabase":
		a.add(action, catalog, "catalog", nil)
		a.add(action, database(in.Name), "database", nil)
	case "GetTable", "DeleteTable":
		a.add(action, catalog, "catalog", nil)
		a.add(action, database(in.DatabaseName), "database", nil)
		a.add(action, tableARN(in.DatabaseName, in.Name), "table", nil)
	case "CreateTable", "UpdateTable":
		a.add(action, catalog, "catalog", nil)
		a.add(action, database(in.DatabaseName), "database", nil)
		a.add(action, tableARN(in.DatabaseName, in.TableInput.Name), "table", nil)
	case "GetTables":
		a.add(action, catalog, "catalog", nil)
		a.add(action, database(in.DatabaseName), "database", nil)
		a.add(action, tableARN(in.DatabaseName, "*"), "table", nil)
	default:
		return fmt.Errorf("%w: %s", ErrNotUnderstood, a.out.Operation)
	}
	return nil
}

// ---- SSM ----

func (a *authorizer) ssm() error {
	var in struct {
		Name  string
		Names []string
	}
	op, err := a.target(&in)
	if err != nil {
		return err
	}
	names := in.Names
	switch op {
	case "GetParameter":
		names = []string{in.Name}
	case "GetParameters":
	default:
		return fmt.Errorf("%w: %s", ErrNotUnderstood, a.out.Operation)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "/") {
			n = "/" + n
		}
		a.add("ssm:"+op, a.arn("ssm", a.s.Region, a.account, "parameter"+n), "parameter", nil)
	}
	return nil
}

// ---- Secrets Manager ----

// secretsManager classifies the Secrets Manager calls daybook makes
// (storekey: GetSecretValue by the secret's ARN). A secret named by its
// name is the ARN IAM would see without its random suffix, which a
// statement's trailing wildcard matches either way.
func (a *authorizer) secretsManager() error {
	var in struct {
		SecretID string `json:"SecretId"`
	}
	op, err := a.target(&in)
	if err != nil {
		return err
	}
	switch op {
	case "GetSecretValue", "DescribeSecret":
	default:
		return fmt.Errorf("%w: %s", ErrNotUnderstood, a.out.Operation)
	}
	res := in.SecretID
	if !strings.HasPrefix(res, "arn:") {
		res = a.arn("secretsmanager", a.s.Region, a.account, "secret:"+res)
	}
	a.add("secretsmanager:"+op, res, "secret", nil)
	return nil
}

// ---- S3 (REST, path-style) ----

// s3 classifies a path-style S3 call: the bucket and key from the path,
// the operation from the method, the sub-resource in the query and the
// copy-source header (the actions of the IAM S3 reference's table of
// operations and the permissions they need).
func (a *authorizer) s3() error {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(a.c.URL.Path, "/"), "/")
	if bucket == "" {
		a.out.Operation = "s3 ListBuckets"
		a.add("s3:ListAllMyBuckets", "*", "buckets", nil)
		return nil
	}
	q := a.c.URL.Query()
	ctx := map[string][]string{"s3:ResourceAccount": {a.bucketAccount(bucket)}}
	bucketARN := "arn:" + a.partition + ":s3:::" + bucket
	objectARN := bucketARN + "/" + key
	op, action, res := "", "", objectARN
	var also []string // the object's tags and ACL, authorized with the write that sets them
	has := q.Has
	if key == "" {
		res = bucketARN
		switch m := a.c.Method; {
		case m == http.MethodGet && has("uploads"):
			op, action = "ListMultipartUploads", "s3:ListBucketMultipartUploads"
		case m == http.MethodGet && has("location"):
			op, action = "GetBucketLocation", "s3:GetBucketLocation"
		case m == http.MethodGet && has("versions"):
			op, action = "ListObjectVersions", "s3:ListBucketVersions"
		case (m == http.MethodGet || m == http.MethodHead) && len(subresources(q)) == 0:
			op, action = map[string]string{http.MethodGet: "ListObjects", http.MethodHead: "HeadBucket"}[m], "s3:ListBucket"
			if q.Get("list-type") == "2" {
				op = "ListObjectsV2"
			}
		case m == http.MethodPost && has("delete"):
			return a.deleteObjects(bucketARN, ctx)
		case m == http.MethodPut && len(subresources(q)) == 0:
			op, action = "CreateBucket", "s3:CreateBucket"
		}
	} else {
		copySource := a.c.Header.Get("X-Amz-Copy-Source")
		switch m := a.c.Method; {
		case (m == http.MethodGet || m == http.MethodHead) && len(subresources(q)) == 0:
			op, action = map[string]string{http.MethodGet: "GetObject", http.MethodHead: "HeadObject"}[m], "s3:GetObject"
		case m == http.MethodGet && has("uploadId"):
			op, action = "ListParts", "s3:ListMultipartUploadParts"
		case m == http.MethodGet && has("tagging"):
			op, action = "GetObjectTagging", "s3:GetObjectTagging"
		case m == http.MethodGet && has("attributes"):
			op, action = "GetObjectAttributes", "s3:GetObject"
		case m == http.MethodPut && has("partNumber") && has("uploadId"):
			op, action = "UploadPart", "s3:PutObject"
		case m == http.MethodPut && has("tagging"):
			op, action = "PutObjectTagging", "s3:PutObjectTagging"
		case m == http.MethodPut && len(subresources(q)) == 0:
			op, action = "PutObject", "s3:PutObject"
		case m == http.MethodPost && has("uploads"):
			op, action = "CreateMultipartUpload", "s3:PutObject"
		case m == http.MethodPost && has("uploadId"):
			op, action = "CompleteMultipartUpload", "s3:PutObject"
		case m == http.MethodDelete && has("uploadId"):
			op, action = "AbortMultipartUpload", "s3:AbortMultipartUpload"
		case m == http.MethodDelete && len(subresources(q)) == 0:
			op, action = "DeleteObject", "s3:DeleteObject"
		}
		if op == "PutObject" || op == "CreateMultipartUpload" {
			also = objectAttributeActions(a.c.Header)
			if len(also) > 0 && copySource != "" {
				// A copy's tags and ACL follow directives iamcheck does not read.
				return fmt.Errorf("%w: s3 copy into %s with %s", ErrNotUnderstood, a.c.URL.Path, strings.Join(also, ", "))
			}
		}
		if copySource != "" && action == "s3:PutObject" {
			// CopyObject / UploadPartCopy also read the source object.
			op = map[string]string{"PutObject": "CopyObject", "UploadPart": "UploadPartCopy"}[op]
			src, err := url.PathUnescape(strings.TrimPrefix(strings.SplitN(copySource, "?", 2)[0], "/"))
			if err != nil {
				return fmt.Errorf("%w: copy source %q", ErrNotUnderstood, copySource)
			}
			srcBucket, _, _ := strings.Cut(src, "/")
			a.add("s3:GetObject", "arn:"+a.partition+":s3:::"+src, "object",
				map[string][]string{"s3:ResourceAccount": {a.bucketAccount(srcBucket)}})
		}
	}
	if op == "" {
		return fmt.Errorf("%w: s3 %s %s?%s", ErrNotUnderstood, a.c.Method, a.c.URL.Path, a.c.URL.RawQuery)
	}
	a.out.Operation = "s3 " + op
	kind := "object"
	if res == bucketARN {
		kind = "bucket"
	}
	a.add(action, res, kind, ctx)
	for _, x := range also {
		a.add(x, res, kind, ctx)
	}
	return nil
}

// objectAttributeActions are the actions IAM also authorizes for a
// PutObject or CreateMultipartUpload that sets the new object's tags
// (x-amz-tagging: s3:PutObjectTagging) or its ACL (x-amz-acl or an
// x-amz-grant-* header: s3:PutObjectAcl), as S3's API reference says of
// PutObject.
func objectAttributeActions(h http.Header) []string {
	var out []string
	if len(h.Values("X-Amz-Tagging")) > 0 {
		out = append(out, "s3:PutObjectTagging")
	}
	acl := len(h.Values("X-Amz-Acl")) > 0
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Amz-Grant-") {
			acl = true
		}
	}
	if acl {
		out = append(out, "s3:PutObjectAcl")
	}
	return out
}

// subresources lists the query parameters of q that name an S3
// sub-resource or operation (not the listing and response parameters).
func subresources(q url.Values) []string {
	plain := map[string]bool{"list-type": true, "prefix": true, "delimiter": true, "max-keys": true, "continuation-token": true,
		"start-after": true, "encoding-type": true, "fetch-owner": true, "marker": true, "x-id": true, "versionId": true,
		"partNumber": true, "response-content-type": true, "response-content-disposition": true, "response-cache-control": true,
		"response-content-encoding": true, "response-content-language": true, "response-expires": true,
		"max-uploads": true, "key-marker": true, "upload-id-marker": true, "max-parts": true, "part-number-marker": true}
	var out []string
	for k := range q {
		if !plain[k] && !strings.HasPrefix(k, "X-Amz-") {
			out = append(out, k)
		}
	}
	return out
}

// deleteObjects is DeleteObjects: IAM checks s3:DeleteObject on each key.
func (a *authorizer) deleteObjects(bucketARN string, ctx map[string][]string) error {
	a.out.Operation = "s3 DeleteObjects"
	var in struct {
		Objects []struct{ Key string } `xml:"Object"`
	}
	if err := xml.Unmarshal(a.c.Body, &in); err != nil {
		return fmt.Errorf("%w: DeleteObjects body: %v", ErrNotUnderstood, err)
	}
	for _, o := range in.Objects {
		a.add("s3:DeleteObject", bucketARN+"/"+o.Key, "object", ctx)
	}
	return nil
}
