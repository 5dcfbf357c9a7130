// Package azure is the Azure Blob Storage driver of a bucket.Bucket: a
// container in a storage account (ADLS Gen2 accounts, with a hierarchical
// namespace, included: daybook writes through the Blob API, which they
// serve too), over github.com/Azure/azure-sdk-for-go/sdk/storage/azblob.
//
// Its guarantees, beside S3's:
//   - an object of at most one part is one Put Blob carrying its
//     Content-MD5, which Azure verifies (and keeps as the blob's);
//   - a larger one is staged blocks of the part size, at most the Writer's
//     concurrency in flight from its reused part buffers, each carrying its
//     Content-MD5, which Azure verifies, then one Put Block List; nothing is
//     visible until that commit;
//   - an aborted upload's staged blocks are never committed: Azure has no
//     call to drop them, keeps them invisible (no blob exists until a commit,
//     and a commit of the old blob discards them), and garbage-collects them
//     a week after they were staged. So AbortIncomplete has nothing to do;
//   - create-if-absent is If-None-Match: *;
//   - every object carries the encryption scope and the destination's tags
//     (blob index tags) when set.
//
// Metadata names are C# identifiers on Azure: a key's hyphens are written
// as underscores and read back as hyphens (daybook's keys have none of
// their own). Azure has no expected-owner header: the storage account's
// host names the customer's account.
package azure

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Config is how to reach one container.
type Config struct {
	// ServiceURL is the storage account's blob service:
	// https://<account>.blob.core.windows.net/ (ServiceURL), or an
	// emulator's (http://127.0.0.1:10000/devstoreaccount1).
	ServiceURL string
	// Container is the container's name.
	Container string
	Auth
	// Transport sends the requests: nil is the SDK's default; a
	// destination's custom endpoint goes through a guarded one.
	Transport policy.Transporter
	// HTTPCredential lets a token credential authenticate requests to an
	// http:// service URL, which the SDK refuses by default: only for an
	// emulator on this host (a local stack's, a test's).
	HTTPCredential bool
}

// Auth authenticates a container's requests: exactly one of its fields.
type Auth struct {
	// Credential is an Entra ID credential (a federated client assertion).
	Credential azcore.TokenCredential
	// SharedKey is an account key credential: the storage emulator's
	// development account (EmulatorKey) in tests and the local stack.
	SharedKey *container.SharedKeyCredential
	// SAS is a shared access signature (the query string, without "?")
	// granting access to the container.
	SAS string
}

// The storage emulator's development account (Azurite's), documented by
// Microsoft: public test values, valid on no Azure service.
const (
	EmulatorAccount = "devstoreaccount1"
	EmulatorKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// ServiceURLAt is the blob service of a storage account at a custom
// endpoint (https://host[:port]), path-style as the storage emulator and
// Azure Stack serve it: <endpoint>/<account>.
func ServiceURLAt(endpoint, account string) string {
	return strings.TrimSuffix(endpoint, "/") + "/" + account
}

// ServiceURL is the blob service of a storage account on Azure itself.
func ServiceURL(account string) string { return "https://" + account + ".blob.core.windows.net/" }

// NewContainerClient returns the client of cfg's container.
func NewContainerClient(cfg Config) (*container.Client, error) {
	u := strings.TrimSuffix(cfg.ServiceURL, "/") + "/" + cfg.Container
	opts := &container.ClientOptions{}
	if cfg.Transport != nil {
		opts.Transport = cfg.Transport
	}
	opts.InsecureAllowCredentialWithHTTP = cfg.HTTPCredential
	n := 0
	for _, set := range []bool{cfg.Credential != nil, cfg.SharedKey != nil, cfg.SAS != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("azure container %s: want exactly one of a token credential, a shared key and a SAS, have %d", u, n)
	}
	switch {
	case cfg.Credential != nil:
		return container.NewClient(u, cfg.Credential, opts)
	case cfg.SharedKey != nil:
		return container.NewClientWithSharedKeyCredential(u, cfg.SharedKey, opts)
	}
	return container.NewClientWithNoCredential(u+"?"+strings.TrimPrefix(cfg.SAS, "?"), opts)
}

// Options are what every object of a container is written with, and how
// its objects are named.
type Options struct {
	// Account is the storage account's name, for the objects' URIs.
	Account string
	// EncryptionScope is the scope every object is encrypted with (the
	// customer's key, in Key Vault); "" is the account's default.
	EncryptionScope string
	// Tags are the blob index tags every object carries.
	Tags map[string]string
}

// New returns the container c reaches, named name, as a Bucket.
func New(c *container.Client, name string, opts Options) *bucket.Bucket {
	return bucket.Open(NewDriver(c, name, opts))
}

// NewDriver is New's driver, for a test that wraps it.
func NewDriver(c *container.Client, name string, opts Options) bucket.Driver {
	return &driver{c: c, name: name, opts: opts}
}

type driver struct {
	c    *container.Client
	name string
	opts Options
}

var _ bucket.Driver = (*driver)(nil)

func (d *driver) Name() string { return d.name }

// URI is the ABFS URI of key (abfss://container@account.dfs.core.windows.net/key),
// the form Iceberg (Java, PyIceberg, iceberg-go), Spark, Databricks,
// Synapse, Fabric and Trino read; DuckDB's azure extension reads abfss://
// too.
func (d *driver) URI(key string) string {
	return "abfss://" + d.name + "@" + d.opts.Account + ".dfs.core.windows.net/" + key
}

func (d *driver) scope() *blob.CPKScopeInfo {
	if d.opts.EncryptionScope == "" {
		return nil
	}
	return &blob.CPKScopeInfo{EncryptionScope: &d.opts.EncryptionScope}
}

func (d *driver) tags() map[string]string {
	if len(d.opts.Tags) == 0 {
		return nil
	}
	return maps.Clone(d.opts.Tags)
}

// metadata is md with Azure's names: hyphens as underscores.
func metadata(md map[string]string) map[string]*string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]*string, len(md))
	for k, v := range md {
		out[strings.ReplaceAll(k, "-", "_")] = &v
	}
	return out
}

func headers(contentType, contentEncoding string) *blob.HTTPHeaders {
	h := &blob.HTTPHeaders{}
	if contentType != "" {
		h.BlobContentType = &contentType
	}
	if contentEncoding != "" {
		h.BlobContentEncoding = &contentEncoding
	}
	return h
}

// Put is one Put Blob with the body's Content-MD5, which Azure verifies.
func (d *driver) Put(ctx context.Context, key string, body []byte, o bucket.PutOptions) error {
	_, err := d.putOne(ctx, key, o.IfAbsent, o.ContentType, "", o.Metadata, bytes.NewReader(body))
	return err
}

func (d *driver) putOne(ctx context.Context, key string, ifAbsent bool, contentType, contentEncoding string, md map[string]string, body io.ReadSeeker) (upload.Committed, error) {
	sum, err := md5Of(body)
	if err != nil {
		return upload.Committed{}, err
	}
	o := &blockblob.UploadOptions{
		HTTPHeaders:             headers(contentType, contentEncoding),
		Metadata:                metadata(md),
		Tags:                    d.tags(),
		CPKScopeInfo:            d.scope(),
		TransactionalValidation: blob.TransferValidationTypeMD5(sum),
	}
	if ifAbsent {
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to(azcore.ETagAny)}}
	}
	resp, err := d.c.NewBlockBlobClient(key).Upload(ctx, streaming.NopCloser(body), o)
	if err != nil {
		return upload.Committed{}, classify(err)
	}
	return upload.Committed{Key: key, ETag: etag(resp.ETag), VersionID: deref(resp.VersionID)}, nil
}

func to[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func etag(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return string(*e)
}

// md5Of reads body to its end for its MD5, and rewinds it.
func md5Of(body io.ReadSeeker) ([]byte, error) {
	h := md5.New()
	if _, err := io.Copy(h, body); err != nil {
		return nil, err
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

func (d *driver) Head(ctx context.Context, key string) (bucket.Info, error) {
	p, err := d.c.NewBlockBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return bucket.Info{}, classify(err)
	}
	md := make(map[string]string, len(p.Metadata))
	for k, v := range p.Metadata {
		md[strings.ReplaceAll(strings.ToLower(k), "_", "-")] = deref(v)
	}
	var size int64
	if p.ContentLength != nil {
		size = *p.ContentLength
	}
	return bucket.Info{Size: size, ContentType: deref(p.ContentType), Metadata: md}, nil
}

// Get downloads the blob, or the part of it rng names: Azure takes no
// suffix range, so for the last bytes the blob's size is read first.
func (d *driver) Get(ctx context.Context, key string, rng bucket.Range) (io.ReadCloser, int64, error) {
	bb := d.c.NewBlockBlobClient(key)
	o := &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: rng.Offset, Count: rng.Length}}
	if rng.Offset < 0 {
		p, err := bb.GetProperties(ctx, nil)
		if err != nil {
			return nil, 0, classify(err)
		}
		var size int64
		if p.ContentLength != nil {
			size = *p.ContentLength
		}
		if size == 0 {
			return io.NopCloser(bytes.NewReader(nil)), 0, nil
		}
		off := max(0, size+rng.Offset)
		o.Range = blob.HTTPRange{Offset: off, Count: size - off}
	}
	resp, err := bb.DownloadStream(ctx, o)
	if err != nil {
		return nil, 0, classify(err)
	}
	size := int64(-1)
	if resp.ContentLength != nil {
		size = *resp.ContentLength
	}
	return resp.Body, size, nil
}

func (d *driver) Delete(ctx context.Context, key string) error {
	_, err := d.c.NewBlockBlobClient(key).Delete(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return nil
	}
	return classify(err)
}

func (d *driver) List(ctx context.Context, prefix string, fn func(bucket.Object) error) error {
	p := d.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return classify(err)
		}
		for _, b := range page.Segment.BlobItems {
			var size int64
			if b.Properties != nil && b.Properties.ContentLength != nil {
				size = *b.Properties.ContentLength
			}
			if err := fn(bucket.Object{Key: deref(b.Name), Size: size}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *driver) Dirs(ctx context.Context, prefix string, fn func(string) error) error {
	p := d.c.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &prefix})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return classify(err)
		}
		for _, bp := range page.Segment.BlobPrefixes {
			if err := fn(strings.TrimSuffix(strings.TrimPrefix(deref(bp.Name), prefix), "/")); err != nil {
				return err
			}
		}
	}
	return nil
}

// Deletes is how many of DeleteKeys' deletes run at once.
const Deletes = 8

func (d *driver) DeleteKeys(ctx context.Context, keys []string) error {
	return bucket.DeleteEach(ctx, keys, Deletes, d.Delete)
}

// AbortIncomplete has nothing to abort: staged blocks never committed are
// not a blob, cannot be deleted, and are garbage-collected by Azure a week
// after they were staged.
func (d *driver) AbortIncomplete(context.Context, string, []string) ([]string, error) {
	return nil, nil
}

// MaxBlocks is the most blocks a blob may have: the Writer's own limit
// (upload.MaxParts) is below it.
const MaxBlocks = 50000

// Protocol is staged blocks and a committed block list.
func (d *driver) Protocol(key string, opts upload.Options) (upload.Protocol, upload.Options) {
	return &staged{d: d, key: key, opts: opts}, opts
}

func (d *driver) Classify(err error) error { return classify(err) }

// classify names the Azure errors callers branch on.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ke *bucket.KindError
	if errors.As(err, &ke) {
		return err
	}
	var kind error
	var re *azcore.ResponseError
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		kind = bucket.ErrNotFound
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		kind = bucket.ErrNoSuchBucket
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet):
		kind = bucket.ErrExists
	case bloberror.HasCode(err, bloberror.AuthorizationFailure, bloberror.AuthorizationPermissionMismatch,
		bloberror.AuthenticationFailed, bloberror.InsufficientAccountPermissions):
		kind = bucket.ErrAccessDenied
	case errors.As(err, &re):
		switch re.StatusCode {
		case http.StatusNotFound:
			kind = bucket.ErrNotFound
		case http.StatusForbidden, http.StatusUnauthorized:
			kind = bucket.ErrAccessDenied
		case http.StatusPreconditionFailed:
			kind = bucket.ErrExists
		}
	}
	if kind == nil {
		return err
	}
	return &bucket.KindError{Kind: kind, Err: err}
}

// staged is an upload of staged blocks: each part a block named by the
// upload's random id and the part number, committed in order by one Put
// Block List.
type staged struct {
	d    *driver
	key  string
	opts upload.Options
	id   string // random, so two writers of one key never share a block
}

var _ upload.Protocol = (*staged)(nil)

func (s *staged) Where() string { return s.d.URI(s.key) }

func (s *staged) Put(ctx context.Context, body io.ReadSeeker, _ int64, _ uint32) (upload.Committed, error) {
	return s.d.putOne(ctx, s.key, false, s.opts.ContentType, s.opts.ContentEncoding, s.opts.Metadata, body)
}

func (s *staged) Start(context.Context) error {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	s.id = hex.EncodeToString(b[:])
	return nil
}

// blockID is part num's block id: base64 of a fixed-length name, as Azure
// wants every id of a blob the same length.
func (s *staged) blockID(num int32) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", s.id, num))
}

func (s *staged) Part(ctx context.Context, num int32, body io.ReadSeeker, _ int64, _ uint32) error {
	sum, err := md5Of(body)
	if err != nil {
		return err
	}
	_, err = s.d.c.NewBlockBlobClient(s.key).StageBlock(ctx, s.blockID(num), streaming.NopCloser(body), &blockblob.StageBlockOptions{
		CPKScopeInfo:            s.d.scope(),
		TransactionalValidation: blob.TransferValidationTypeMD5(sum),
	})
	return classify(err)
}

func (s *staged) Complete(ctx context.Context, parts int32, _ int64, _ uint32) (upload.Committed, error) {
	ids := make([]string, parts)
	for i := range ids {
		ids[i] = s.blockID(int32(i) + 1)
	}
	resp, err := s.d.c.NewBlockBlobClient(s.key).CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{
		HTTPHeaders:  headers(s.opts.ContentType, s.opts.ContentEncoding),
		Metadata:     metadata(s.opts.Metadata),
		Tags:         s.d.tags(),
		CPKScopeInfo: s.d.scope(),
	})
	if err != nil {
		return upload.Committed{}, classify(err)
	}
	return upload.Committed{Key: s.key, ETag: etag(resp.ETag), VersionID: deref(resp.VersionID)}, nil
}

// Abort leaves the staged blocks to Azure's garbage collection: there is
// no call that drops uncommitted blocks.
func (s *staged) Abort(context.Context) error { return nil }
