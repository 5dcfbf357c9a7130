package destination

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
	"github.com/daybook-dev/daybook/shared/destination/storekey"
	"github.com/daybook-dev/daybook/shared/upload"
)

// storeKey is everything that makes two GCS or Azure destinations'
// clients differ: the destination's identity and how it is reached (its
// access block: another service account, application or secret is another
// client, as another role is for S3).
type storeKey struct {
	account        string
	kind           account.StoreKind
	bucket         string
	storageAccount string
	endpoint       string
	gcs            account.GCSAccess
	azure          account.AzureAccess
}

// TokenEndpoints are where GCS and Azure credentials come from: the zero
// value is Google's and Entra ID's own. A test points them at fakes
// (shared/devkit/tokenfake); a deployment never sets them.
type TokenEndpoints struct {
	// Google are Google's STS, IAM Credentials and OAuth 2.0 endpoints,
	// called through GoogleClient (nil: a client with a timeout).
	Google       gcpauth.Endpoints
	GoogleClient *http.Client
	// EntraAuthority is Entra ID's authority host (https://...), called
	// through EntraTransport (nil: the SDK's).
	EntraAuthority string
	EntraTransport policy.Transporter
}

// SetStoreCredentials sets GCSCredentials and AzureCredentials from Base:
// its own AWS credentials and region for the federations (GCS: the signed
// GetCallerIdentity Google's STS has AWS verify; Azure: the
// sts:GetWebIdentityToken of Base's identity), and Secrets Manager through
// Base for keys, read only under secretPattern (DESTINATION_SECRET_PATTERN,
// account.Rules.SecretPattern). The clients they give are kept per
// destination (Open), so a warm process reuses each token until shortly
// before it expires, as it reuses an assumed role's session.
func (f *Clients) SetStoreCredentials(secretPattern string, t TokenEndpoints) {
	keys := storekey.Reader{API: secretsmanager.NewFromConfig(f.Base), Pattern: secretPattern}
	f.GCSCredentials = &gcpauth.Federation{AWS: f.Base.Credentials, Region: f.Base.Region, HTTPClient: t.GoogleClient, Endpoints: t.Google, Keys: keys}
	f.AzureCredentials = &azureauth.Federation{STS: sts.NewFromConfig(f.Base), AuthorityHost: t.EntraAuthority, Transport: t.EntraTransport, Keys: keys}
}

// Open returns the account's destination bucket on its store, every
// request through the destination's credentials, every object written
// with its encryption and tags: S3 (through Client, with opts: the expected
// owner and checksums), GCS or Azure (through a client kept per
// destination, like S3's).
func (f *Clients) Open(ctx context.Context, accountID string, d account.Destination, opts bucket.Options) (*bucket.Bucket, error) {
	switch d.Kind() {
	case account.StoreGCS:
		c, err := f.gcsClient(ctx, accountID, d)
		if err != nil {
			return nil, err
		}
		o := gcs.Options{Tags: d.Tags}
		if d.Encryption != nil {
			o.KMSKeyName = d.Encryption.KMSKey
		}
		return gcs.New(c, d.Bucket, o), nil
	case account.StoreAzure:
		c, err := f.azureClient(ctx, accountID, d)
		if err != nil {
			return nil, err
		}
		o := azure.Options{Account: d.StorageAccount, Tags: d.Tags}
		if d.Encryption != nil {
			o.EncryptionScope = d.Encryption.Scope
		}
		return azure.New(c, d.Bucket, o), nil
	}
	return OpenS3(f.Client(accountID, d), d, f.DeploymentAccountID, opts), nil
}

// OpenS3 is an S3 destination's bucket through api (its client, Client's,
// or a test's wrapper of it), with opts (the expected owner) and what the
// destination says of its objects: its checksums setting and the
// attributes every object is written with (S3Attributes).
func OpenS3(api bucket.API, d account.Destination, deploymentAccountID string, opts bucket.Options) *bucket.Bucket {
	switch d.Checksums {
	case account.ChecksumsComposite:
		opts.Checksums = upload.ChecksumComposite
	case account.ChecksumsNone:
		opts.Checksums = upload.ChecksumNone
	}
	opts.Attributes = S3Attributes(d, deploymentAccountID)
	return bucket.New(api, d.Bucket, opts)
}

// S3Attributes are what every object of an S3 destination is written with:
// its encryption, its tags, and bucket-owner-full-control when the writer's
// account is not the bucket's owner (a role in another account than
// expected_bucket_owner), so the bucket's owner owns every object in a
// bucket with ACLs enabled (one that enforces bucket ownership takes this
// ACL and owns them anyway). A writer in the owner's account owns nothing
// the owner does not, so it sends none: such a role needs no
// s3:PutObjectAcl, and every account saved before stays as it was.
func S3Attributes(d account.Destination, deploymentAccountID string) upload.S3Attributes {
	var a upload.S3Attributes
	if e := d.Encryption; e != nil {
		switch e.S3Type() {
		case account.EncryptionSSEKMS:
			a.ServerSideEncryption, a.KMSKeyID = types.ServerSideEncryptionAwsKms, e.KMSKey
		case account.EncryptionSSES3:
			a.ServerSideEncryption = types.ServerSideEncryptionAes256
		}
	}
	writer := deploymentAccountID
	if d.RoleARN != "" {
		writer = account.RoleAccountID(d.RoleARN)
	}
	if owner, err := d.BucketOwner(deploymentAccountID); err == nil && owner != "" && writer != "" && owner != writer && d.Endpoint == "" {
		a.ACL = types.ObjectCannedACLBucketOwnerFullControl
	}
	a.Tagging = Tagging(d.Tags)
	return a
}

// Tagging is tags as S3's x-amz-tagging query (k1=v1&k2=v2, in key order).
func Tagging(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	var b strings.Builder
	for i, k := range sortedKeys(tags) {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(tagEscape(k) + "=" + tagEscape(tags[k]))
	}
	return b.String()
}

func (f *Clients) store(key storeKey, build func() (any, error)) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.stores[key]; ok {
		return c, nil
	}
	c, err := build()
	if err != nil {
		return nil, err
	}
	if f.stores == nil {
		f.stores = map[storeKey]any{}
	}
	f.stores[key] = c
	return c, nil
}

func keyOf(accountID string, d account.Destination) storeKey {
	k := storeKey{account: accountID, kind: d.Kind(), bucket: d.Bucket, storageAccount: d.StorageAccount, endpoint: d.Endpoint}
	if d.GCS != nil {
		k.gcs = *d.GCS
	}
	if d.Azure != nil {
		k.azure = *d.Azure
	}
	return k
}

// Errors of Open.
var (
	// ErrNoCredentials: the deployment has no way to authenticate to the
	// destination's store.
	ErrNoCredentials = errors.New("no credentials for the destination's store")
	// ErrPlainHTTP: a token would cross plain http to an endpoint that is
	// not this host's.
	ErrPlainHTTP = errors.New("a token over plain http")
)

// checkHTTP refuses to send a token to a plain-http endpoint unless the
// deployment allows loopback endpoints (a local stack, whose emulators
// speak http): a token in clear text is readable on the way.
func (f *Clients) checkHTTP(accountID string, d account.Destination) error {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(d.Endpoint)), "http://") && !f.Endpoints.AllowLoopback {
		return fmt.Errorf("account %s, %s: %w: destination.endpoint %s must be https", accountID, d.URI(""), ErrPlainHTTP, d.Endpoint)
	}
	return nil
}

func (f *Clients) gcsClient(ctx context.Context, accountID string, d account.Destination) (*gcs.Client, error) {
	c, err := f.store(keyOf(accountID, d), func() (any, error) {
		cfg := gcs.Config{Endpoint: gcs.EndpointAt(d.Endpoint)}
		switch {
		case d.GCS != nil && f.GCSCredentials == nil:
			return nil, fmt.Errorf("account %s, %s: %w (this deployment configures none for gcs)", accountID, d.URI(""), ErrNoCredentials)
		case d.GCS != nil:
			if err := f.checkHTTP(accountID, d); err != nil {
				return nil, err
			}
			ts, err := f.GCSCredentials.Credentials(ctx, *d.GCS)
			if err != nil {
				return nil, fmt.Errorf("gcs credentials of account %s: %w", accountID, err)
			}
			cfg.TokenSource = ts
		case d.Endpoint == "":
			return nil, fmt.Errorf("account %s, %s: %w (no destination.gcs)", accountID, d.URI(""), ErrNoCredentials)
		}
		if d.Endpoint != "" {
			cfg.Transport = f.guardedTransport()
		}
		// The client lives as long as the process: the context of its
		// creation must not end it.
		return gcs.NewClient(context.WithoutCancel(ctx), cfg)
	})
	if err != nil {
		return nil, err
	}
	return c.(*gcs.Client), nil
}

func (f *Clients) azureClient(ctx context.Context, accountID string, d account.Destination) (*container.Client, error) {
	c, err := f.store(keyOf(accountID, d), func() (any, error) {
		cfg := azure.Config{ServiceURL: azure.ServiceURL(d.StorageAccount), Container: d.Bucket}
		if d.Endpoint != "" {
			cfg.ServiceURL = azure.ServiceURLAt(d.Endpoint, d.StorageAccount)
			cfg.Transport = &http.Client{Transport: f.guardedTransport()}
		}
		switch {
		case d.Azure != nil && f.AzureCredentials == nil:
			return nil, fmt.Errorf("account %s, %s: %w (this deployment configures none for azure)", accountID, d.URI(""), ErrNoCredentials)
		case d.Azure != nil:
			if err := f.checkHTTP(accountID, d); err != nil {
				return nil, err
			}
			creds, err := f.AzureCredentials.Credentials(ctx, *d.Azure)
			if err != nil {
				return nil, fmt.Errorf("azure credentials of account %s: %w", accountID, err)
			}
			if creds.SAS != nil {
				cfg.SAS = creds.SAS.Query
			} else {
				cfg.Credential = creds.Token
				cfg.HTTPCredential = f.Endpoints.AllowLoopback // checkHTTP: http only on a local stack
			}
		case d.Endpoint != "" && d.StorageAccount == azure.EmulatorAccount:
			key, err := container.NewSharedKeyCredential(azure.EmulatorAccount, azure.EmulatorKey)
			if err != nil {
				return nil, err
			}
			cfg.SharedKey = key
		default:
			return nil, fmt.Errorf("account %s, %s: %w (no destination.azure, and not the storage emulator's development account)", accountID, d.URI(""), ErrNoCredentials)
		}
		return azure.NewContainerClient(cfg)
	})
	if err != nil {
		return nil, err
	}
	return c.(*container.Client), nil
}

// guardedTransport is an HTTP transport whose connections go through the
// endpoint guard, with no proxy (the guard would see the proxy's address).
func (f *Clients) guardedTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: f.guard()}
	t.DialContext = d.DialContext
	return t
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tagEscape is s URL-encoded, a space as %20.
func tagEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
