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

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/upload"
)

// storeKey is everything that makes two GCS or Azure destinations'
// clients differ.
type storeKey struct {
	account        string
	kind           account.StoreKind
	bucket         string
	storageAccount string
	endpoint       string
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
	opts.Attributes = S3Attributes(d, f.DeploymentAccountID)
	return bucket.New(f.Client(accountID, d), d.Bucket, opts), nil
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
	return storeKey{account: accountID, kind: d.Kind(), bucket: d.Bucket, storageAccount: d.StorageAccount, endpoint: d.Endpoint}
}

// ErrNoCredentials: the deployment has no way to authenticate to the
// destination's store.
var ErrNoCredentials = errors.New("no credentials for the destination's store")

func (f *Clients) gcsClient(ctx context.Context, accountID string, d account.Destination) (*gcs.Client, error) {
	c, err := f.store(keyOf(accountID, d), func() (any, error) {
		cfg := gcs.Config{Endpoint: gcs.EndpointAt(d.Endpoint)}
		switch {
		case f.GCSCredentials != nil:
			ts, err := f.GCSCredentials(ctx, accountID, d)
			if err != nil {
				return nil, fmt.Errorf("gcs credentials of account %s: %w", accountID, err)
			}
			cfg.TokenSource = ts
		case d.Endpoint == "":
			return nil, fmt.Errorf("account %s, gs://%s: %w (this deployment configures none for gcs)", accountID, d.Bucket, ErrNoCredentials)
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
		case f.AzureCredentials != nil:
			auth, err := f.AzureCredentials(ctx, accountID, d)
			if err != nil {
				return nil, fmt.Errorf("azure credentials of account %s: %w", accountID, err)
			}
			cfg.Auth = auth
		case d.Endpoint != "" && d.StorageAccount == azure.EmulatorAccount:
			key, err := container.NewSharedKeyCredential(azure.EmulatorAccount, azure.EmulatorKey)
			if err != nil {
				return nil, err
			}
			cfg.SharedKey = key
		default:
			return nil, fmt.Errorf("account %s, container %s of storage account %s: %w (this deployment configures none for azure)", accountID, d.Bucket, d.StorageAccount, ErrNoCredentials)
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
