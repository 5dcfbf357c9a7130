// Package destination reaches an account's own bucket (C1, C3): it
// assumes the account's role with its external id when one is set, uses a
// custom endpoint when configured, and checks the connection by writing
// (C2), because a read-only key passes every other check.
//
// A custom endpoint is tenant configuration, so the client built for one
// dials through a guard (netguard): every address its host resolves to is
// checked when the connection is made, before a packet is sent, and the
// instance metadata and credential services, link-local, private and
// loopback addresses are refused unless Clients.Endpoints allows them. That
// closes what a check when the account is saved cannot: a hostname that
// resolves somewhere else later (DNS rebinding), or a redirect. Clients for
// AWS itself (no custom endpoint) are not guarded: their hosts are AWS's, or
// the operator's own AWS_ENDPOINT_URL.
package destination

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
	"github.com/daybook-dev/daybook/shared/netguard"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Clients builds S3 clients for destinations from daybook's own
// configuration and keeps one per destination identity, so a warm Lambda
// reuses its assumed-role credentials instead of calling AssumeRole for
// every partition. Use it by pointer; it is safe for concurrent use.
type Clients struct {
	Base aws.Config
	// STS is used to assume customer roles; nil means sts.NewFromConfig(Base).
	STS stscreds.AssumeRoleAPIClient
	// Endpoints is what a custom endpoint may connect to. The zero value
	// allows public addresses only; local development sets AllowLoopback,
	// and a deployment that allows private endpoints (the account rule
	// AllowPrivateEndpoints) sets AllowPrivate.
	Endpoints netguard.Policy
	// SessionPolicy, when set, is the session policy every AssumeRole for a
	// destination carries: the session may do only what both the customer's
	// role and this policy allow. Nil: the role's own permissions. The
	// console, which only reads, sets ReadObjectsPolicy.
	SessionPolicy func(d account.Destination) string
	// Now is the clock assumed-role credentials are checked against
	// (nil: time.Now).
	Now func() time.Time
	// DeploymentAccountID is the deployment's own AWS account, the writer
	// of a destination without a role (Open's S3 attributes).
	DeploymentAccountID string

	// GCSCredentials gets the tokens of a GCS destination with a
	// destination.gcs block (Workload Identity Federation from Base's own
	// AWS credentials, or a service account key from Secrets Manager), and
	// AzureCredentials those of an Azure destination with destination.azure
	// (a federated client assertion from sts:GetWebIdentityToken, or a SAS
	// from Secrets Manager): SetStoreCredentials sets both. Nil refuses
	// such a destination (ErrNoCredentials). A destination without the
	// block is at an emulator's endpoint (account validation allows no
	// other) and is reached without credentials: GCS anonymously, Azure's
	// development account with its documented key.
	GCSCredentials   *gcpauth.Federation
	AzureCredentials *azureauth.Federation

	mu      sync.Mutex
	clients map[clientKey]*s3.Client
	stores  map[storeKey]any // *gcs.Client or *container.Client
	// afterGuard, in tests, runs when the guard has allowed an address.
	afterGuard func(network, address string) error
}

// clientKey is everything that makes two destinations' clients differ.
type clientKey struct {
	account, region, role, externalID, endpoint string
}

// Client returns an S3 client acting in the destination's account. With a
// role, credentials come from AssumeRole with the external id, kept until
// RefreshMargin before they expire (roleCredentials); without one, daybook's own credentials are used —
// the explicit fallback of C1.
func (f *Clients) Client(accountID string, d account.Destination) *s3.Client {
	key := clientKey{accountID, d.Region, d.RoleARN, d.ExternalID, d.Endpoint}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok {
		return c
	}
	if f.clients == nil {
		f.clients = map[clientKey]*s3.Client{}
	}
	c := f.newClient(accountID, d)
	f.clients[key] = c
	return c
}

func (f *Clients) newClient(accountID string, d account.Destination) *s3.Client {
	cfg := f.Base.Copy()
	if d.Region != "" {
		cfg.Region = d.Region
	}
	if d.RoleARN != "" {
		api := f.STS
		if api == nil {
			api = sts.NewFromConfig(f.Base)
		}
		cfg.Credentials = &roleCredentials{now: f.now, p: stscreds.NewAssumeRoleProvider(api, d.RoleARN, func(o *stscreds.AssumeRoleOptions) {
			if d.ExternalID != "" {
				o.ExternalID = aws.String(d.ExternalID)
			}
			o.RoleSessionName = "daybook-" + accountID
			o.Duration = time.Hour
			if f.SessionPolicy != nil {
				o.Policy = aws.String(f.SessionPolicy(d))
			}
		})}
	}
	if d.Endpoint != "" {
		cfg.BaseEndpoint = aws.String(d.Endpoint)
		cfg.HTTPClient = f.guardedHTTPClient()
	}
	return awsclient.NewS3(cfg)
}

func (f *Clients) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// RefreshMargin is how long before assumed-role credentials expire they
// are replaced: a request signed with them must still reach S3 while they
// are valid, and a multipart upload signs a request per part.
const RefreshMargin = 5 * time.Minute

// roleCredentials keeps a role's credentials until RefreshMargin before
// they expire, by the Clients' clock: one AssumeRole per destination while
// they are valid, however many requests and runs a warm function makes.
type roleCredentials struct {
	p   aws.CredentialsProvider
	now func() time.Time
	mu  sync.Mutex
	c   aws.Credentials
}

var _ aws.CredentialsProvider = (*roleCredentials)(nil)

// Retrieve implements aws.CredentialsProvider. Concurrent callers wait for
// one AssumeRole.
func (r *roleCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.c.HasKeys() && (!r.c.CanExpire || r.now().Before(r.c.Expires.Add(-RefreshMargin))) {
		return r.c, nil
	}
	c, err := r.p.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, err
	}
	r.c = c
	return c, nil
}

// ReadObjectsPolicy is a session policy that allows s3:GetObject on the
// objects of d's bucket and nothing else, in the partition of d's role.
func ReadObjectsPolicy(d account.Destination) string {
	partition := "aws"
	if a, err := arn.Parse(d.RoleARN); err == nil && a.Partition != "" {
		partition = a.Partition
	}
	type statement struct {
		Sid, Effect, Action, Resource string
	}
	doc := struct {
		Version   string
		Statement []statement
	}{"2012-10-17", []statement{{"ReadObjects", "Allow", "s3:GetObject", "arn:" + partition + ":s3:::" + d.Bucket + "/*"}}}
	b, _ := json.Marshal(doc) // strings only: it cannot fail
	return string(b)
}

// guardedHTTPClient is the SDK's default HTTP client with the endpoint
// policy on its dialer and no proxy: through a proxy the guard would see the
// proxy's address, not the endpoint's. Redirects dial through the same guard.
func (f *Clients) guardedHTTPClient() aws.HTTPClient {
	control := f.guard()
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Control = control }).
		WithTransportOptions(func(t *http.Transport) { t.Proxy = nil })
}

// guard is the dialer control of a custom endpoint's connections.
func (f *Clients) guard() func(network, address string, c syscall.RawConn) error {
	policy, after := f.Endpoints, f.afterGuard
	return func(network, address string, c syscall.RawConn) error {
		if err := policy.Control(network, address, c); err != nil {
			return fmt.Errorf("destination endpoint: %w", err)
		}
		if after != nil {
			return after(network, address)
		}
		return nil
	}
}

// Owner returns the ExpectedBucketOwner parameter for every S3 call to d:
// d.BucketOwner(deploymentAccountID) as a pointer, nil only where no AWS
// account owns the bucket (daybook's own role on a custom endpoint). An
// owner that cannot be determined is an error naming the field, and the
// caller must not call S3 (C1, C4).
func Owner(d account.Destination, deploymentAccountID string) (*string, error) {
	owner, err := d.BucketOwner(deploymentAccountID)
	if err != nil || owner == "" {
		return nil, err
	}
	return aws.String(owner), nil
}

// TestAPI is what the connection test calls, with the SDK's signatures.
type TestAPI interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ TestAPI = (*s3.Client)(nil)

// Check is one step of a connection test.
type Check struct {
	Step       string `json:"step"`
	Permission string `json:"permission"`
	OK         bool   `json:"ok"`
	Problem    string `json:"problem,omitempty"`
}

// CheckConnection writes a small object under prefix, reads it back, starts and aborts
// a multipart upload, lists the prefix and its incomplete multipart uploads
// and deletes the object (C2): the calls an export makes. Every step runs
// even after a failure so the report names each missing permission, in
// words. owner is the destination's BucketOwner (see Owner); every call
// sends it when not empty.
//
// It writes with attrs, what every object of the destination carries
// (S3Attributes: its KMS key, ACL, tags): a role that may write but not use
// the key fails the write step, the key named in words.
func CheckConnection(ctx context.Context, api TestAPI, bucket, prefix, owner string, attrs upload.S3Attributes, now time.Time) ([]Check, error) {
	key := strings.TrimSuffix(prefix, "/") + fmt.Sprintf("/_daybook_connection_test_%d", now.UnixNano())
	var ob *string
	if owner != "" {
		ob = aws.String(owner)
	}
	var checks []Check
	// why, when set, follows the problem: what an export needs the step for.
	run := func(step, perm, why string, fn func() error) {
		c := Check{Step: step, Permission: perm, OK: true}
		if err := fn(); err != nil {
			c.OK, c.Problem = false, explain(bucket, perm, attrs.KMSKeyID, err)
			if why != "" {
				c.Problem += ": " + why
			}
		}
		checks = append(checks, c)
	}
	run("write a small object", writePermissions(attrs), "", func() error {
		in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader([]byte("daybook connection test\n")), ExpectedBucketOwner: ob,
			ServerSideEncryption: attrs.ServerSideEncryption, ACL: attrs.ACL}
		if attrs.KMSKeyID != "" {
			in.SSEKMSKeyId, in.BucketKeyEnabled = aws.String(attrs.KMSKeyID), aws.Bool(true)
		}
		if attrs.Tagging != "" {
			in.Tagging = aws.String(attrs.Tagging)
		}
		_, err := api.PutObject(ctx, in)
		return err
	})
	// Every export reads the partition's old _SUCCESS to keep generations increasing.
	run("read it back", "s3:GetObject", "", func() error {
		out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, ExpectedBucketOwner: ob})
		if err != nil {
			return err
		}
		return out.Body.Close()
	})
	run("start and abort a multipart upload", writePermissions(attrs)+", s3:AbortMultipartUpload", "", func() error {
		in := &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String(key + ".mpu"), ExpectedBucketOwner: ob,
			ServerSideEncryption: attrs.ServerSideEncryption, ACL: attrs.ACL}
		if attrs.KMSKeyID != "" {
			in.SSEKMSKeyId, in.BucketKeyEnabled = aws.String(attrs.KMSKeyID), aws.Bool(true)
		}
		if attrs.Tagging != "" {
			in.Tagging = aws.String(attrs.Tagging)
		}
		out, err := api.CreateMultipartUpload(ctx, in)
		if err != nil {
			return err
		}
		_, err = api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: aws.String(key + ".mpu"), UploadId: out.UploadId, ExpectedBucketOwner: ob})
		return err
	})
	run("list the prefix", "s3:ListBucket", "", func() error {
		_, err := api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String(prefix), MaxKeys: aws.Int32(1), ExpectedBucketOwner: ob})
		return err
	})
	run("list incomplete multipart uploads under the prefix", "s3:ListBucketMultipartUploads",
		"every export's commit lists the partition's incomplete multipart uploads to abort those a killed run left behind, so without it every export fails", func() error {
			_, err := api.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: aws.String(prefix), MaxUploads: aws.Int32(1), ExpectedBucketOwner: ob})
			return err
		})
	run("delete the test object", "s3:DeleteObject", "", func() error {
		_, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key, ExpectedBucketOwner: ob})
		return err
	})
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c.Permission)
		}
	}
	if len(failed) > 0 {
		return checks, fmt.Errorf("destination s3://%s/%s is missing %s", bucket, prefix, strings.Join(failed, ", "))
	}
	return checks, nil
}

// WriteActions are the IAM actions a PutObject or CreateMultipartUpload
// of an object written with attrs needs: s3:PutObject, and, as S3's API
// reference says of PutObject, s3:PutObjectTagging for its tags and
// s3:PutObjectAcl for its ACL. The account test names them and PolicyFor
// grants them.
func WriteActions(attrs upload.S3Attributes) []string {
	p := []string{"s3:PutObject"}
	if attrs.Tagging != "" {
		p = append(p, "s3:PutObjectTagging")
	}
	if attrs.ACL != "" {
		p = append(p, "s3:PutObjectAcl")
	}
	return p
}

// writePermissions is WriteActions as a step names them.
func writePermissions(attrs upload.S3Attributes) string {
	return strings.Join(WriteActions(attrs), ", ")
}

// ConditionalWriteStep is the step CheckConditionalWrite reports.
const ConditionalWriteStep = "refuse a conditional write over an existing object (If-None-Match: *)"

// CheckConditionalWrite checks that the store honours If-None-Match: it
// writes a small object under prefix, then writes it again with
// If-None-Match: *, which must be refused (412 PreconditionFailed, or 409
// ConditionalRequestConflict), and deletes it. An account's Iceberg table
// commits each metadata version with such a write (icetable): on a store
// that ignores the header two exports at once both "win", the later one
// silently replaces the other's version, and a day drops out of the table.
// S3 honours it; an S3-compatible store may not, and the check says so in
// words. owner is sent on every call when not empty.
func CheckConditionalWrite(ctx context.Context, api TestAPI, bucket, prefix, owner string, now time.Time) Check {
	key := strings.TrimSuffix(prefix, "/") + fmt.Sprintf("/_daybook_conditional_write_test_%d", now.UnixNano())
	var ob *string
	if owner != "" {
		ob = aws.String(owner)
	}
	c := Check{Step: ConditionalWriteStep, Permission: "s3:PutObject", OK: true}
	put := func(ifNoneMatch *string) error {
		_, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader([]byte("daybook conditional write test\n")),
			IfNoneMatch: ifNoneMatch, ExpectedBucketOwner: ob})
		return err
	}
	if err := put(nil); err != nil {
		c.OK, c.Problem = false, explain(bucket, c.Permission, "", err)
		return c
	}
	defer func() {
		_, _ = api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key, ExpectedBucketOwner: ob})
	}()
	const why = "the Iceberg table (destination.table_format: iceberg) commits each version with such a write, so on this store two exports at once would silently drop a day from the table: use a store that honours If-None-Match, or an account without the table"
	err := put(aws.String("*"))
	var ae smithy.APIError
	switch {
	case err == nil:
		c.OK, c.Problem = false, "the store accepted a write with If-None-Match: * over an existing object: it ignores conditional writes; "+why
	case errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict"):
	default:
		c.OK, c.Problem = false, "a write with If-None-Match: * failed otherwise than refused as existing ("+explain(bucket, c.Permission, "", err)+"); "+why
	}
	return c
}

// explain says in words why a step failed. For a destination whose
// objects are encrypted with kmsKey, S3 refuses a write (or a read) whose
// role may not use the key with AccessDenied naming the kms: action, or a
// KMS.* code.
func explain(bucket, perm, kmsKey string, err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code, msg := ae.ErrorCode(), ae.ErrorMessage()
		if kmsKey != "" && (strings.HasPrefix(code, "KMS.") || (code == "AccessDenied" || code == "Forbidden") && strings.Contains(msg, "kms:")) {
			why := "the role may not use key " + kmsKey + ": grant kms:GenerateDataKey and kms:Decrypt on it (the key policy, or the role's policy where the key policy lets IAM decide)"
			switch code {
			case "KMS.DisabledException", "KMS.KMSInvalidStateException":
				why = "key " + kmsKey + " is disabled or pending deletion: enable it"
			case "KMS.NotFoundException":
				why = "key " + kmsKey + " does not exist (or is in another region than the bucket)"
			}
			return why
		}
		switch code {
		case "AccessDenied", "Forbidden":
			return fmt.Sprintf("access denied: the role needs %s on bucket %s", perm, bucket)
		case "NoSuchBucket", "NotFound":
			return fmt.Sprintf("bucket %s does not exist (or is in another region)", bucket)
		case "InvalidBucketOwner":
			return fmt.Sprintf("bucket %s is not owned by the expected account", bucket)
		}
		return fmt.Sprintf("%s: %s", ae.ErrorCode(), ae.ErrorMessage())
	}
	return err.Error()
}
