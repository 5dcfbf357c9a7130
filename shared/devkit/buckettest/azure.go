package buckettest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// AzureDifferences are how Azure Blob Storage differs from S3.
var AzureDifferences = Differences{
	AttrsUnkept:    "Azurite keeps no encryption scope (Azure does): the case checks each request that wrote a blob carried it",
	NoOwner:        "Azure has no expected-owner header: the storage account's host name is the customer's",
	NotMultipart:   "an Azure upload in parts is staged blocks and one Put Block List: no per-part ETag or checksum mode; Azure verifies each block's Content-MD5",
	UploadsKept:    "Azure keeps an aborted upload's staged blocks, invisible (no blob exists until a commit), and garbage-collects them a week after they were staged: no call drops them, so there is nothing to abort",
	ObjectChecksum: "Azure keeps a Content-MD5, not a CRC32C: a Put Blob's, which it verifies; a blob committed from blocks keeps none, each block's MD5 having been verified",
}

// AzuriteClient returns a client of the container name on Azurite srv,
// with its development account's key.
func AzuriteClient(srv *serverproc.Process, name string) (*container.Client, error) {
	return azuriteClient(srv, name, nil)
}

func azuriteClient(srv *serverproc.Process, name string, rec *Requests) (*container.Client, error) {
	key, err := container.NewSharedKeyCredential(azurite.Account, azurite.Key)
	if err != nil {
		return nil, err
	}
	cfg := azure.Config{ServiceURL: azurite.Endpoint(srv), Container: name, Auth: azure.Auth{SharedKey: key}}
	if rec != nil {
		cfg.Transport = rec
	}
	return azure.NewContainerClient(cfg)
}

// AzuriteBackend returns a constructor of fresh containers on Azurite srv,
// named after the test.
func AzuriteBackend(srv **serverproc.Process) func(t *testing.T) Backend {
	return func(t *testing.T) Backend {
		t.Helper()
		name := BucketName(t)
		rec := &Requests{}
		c, err := azuriteClient(*srv, name, rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(t.Context(), nil); err != nil {
			t.Fatalf("create container %s: %v", name, err)
		}
		missing, err := AzuriteClient(*srv, name+"-missing")
		if err != nil {
			t.Fatal(err)
		}
		return Backend{
			Store: "azure",
			Open: func(f *Faults, _ bucket.Options, a Attrs) *bucket.Bucket {
				return bucket.Open(f.WrapDriver(azure.NewDriver(c, name, azure.Options{Account: azurite.Account, EncryptionScope: a.KMSKey, Tags: a.Tags})))
			},
			Missing:     azure.New(missing, name+"-missing", azure.Options{Account: azurite.Account}),
			Inspect:     &azureInspector{c: c, rec: rec},
			SampleAttrs: Attrs{KMSKey: "daybookexports", Tags: sampleTags},
			Differences: AzureDifferences,
		}
	}
}

type azureInspector struct {
	c   *container.Client
	rec *Requests
}

// Sent: the encryption scope of the last request that wrote key (a Put
// Blob or a Put Block List; Azure keeps it, Azurite does not), and the
// index tags the blob keeps.
func (i *azureInspector) Sent(key string) (Attrs, bool) {
	var a Attrs
	for _, q := range i.rec.Matching(func(q Request) bool {
		return q.Method == http.MethodPut && strings.HasSuffix(q.URL.Path, "/"+key) && q.URL.Query().Get("comp") != "block"
	}) {
		// The SDK sets the header in lower case, as no canonical key.
		if v := q.Header["x-ms-encryption-scope"]; len(v) > 0 {
			a.KMSKey = v[0]
		} else {
			a.KMSKey = q.Header.Get("x-ms-encryption-scope")
		}
	}
	if st, ok, err := i.Object(context.Background(), key); err == nil && ok {
		a.Tags = st.Attrs.Tags
	}
	return a, true
}

var _ Inspector = (*azureInspector)(nil)

func (i *azureInspector) Object(ctx context.Context, key string) (Stored, bool, error) {
	bb := i.c.NewBlockBlobClient(key)
	p, err := bb.GetProperties(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return Stored{}, false, nil
	}
	if err != nil {
		return Stored{}, false, err
	}
	resp, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		return Stored{}, false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Stored{}, false, err
	}
	md := map[string]string{}
	for k, v := range p.Metadata {
		md[strings.ReplaceAll(strings.ToLower(k), "_", "-")] = deref(v)
	}
	s := Stored{Data: data, ContentType: deref(p.ContentType), ContentEncoding: deref(p.ContentEncoding), Metadata: md}
	if p.ETag != nil {
		s.ETag = string(*p.ETag)
	}
	if len(p.ContentMD5) > 0 {
		s.MD5 = base64.StdEncoding.EncodeToString(p.ContentMD5)
	}
	s.Attrs.KMSKey = deref(p.EncryptionScope)
	if tags, err := bb.GetTags(ctx, nil); err == nil && len(tags.BlobTagSet) > 0 {
		s.Attrs.Tags = map[string]string{}
		for _, t := range tags.BlobTagSet {
			s.Attrs.Tags[deref(t.Key)] = deref(t.Value)
		}
	}
	return s, true, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (i *azureInspector) names(ctx context.Context, uncommitted bool) ([]string, error) {
	o := &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{UncommittedBlobs: uncommitted}}
	p := i.c.NewListBlobsFlatPager(o)
	var out []string
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, b := range page.Segment.BlobItems {
			out = append(out, deref(b.Name))
		}
	}
	return out, nil
}

func (i *azureInspector) Keys(ctx context.Context) ([]string, error) { return i.names(ctx, false) }

// OpenUploads lists the keys with staged, uncommitted blocks: of the blobs
// listed with uncommitted ones, and of byKey.
func (i *azureInspector) OpenUploads(ctx context.Context, byKey ...string) ([]string, error) {
	names, err := i.names(ctx, true)
	if err != nil {
		return nil, err
	}
	names = distinctKeys(append(names, byKey...))
	var open []string
	for _, n := range names {
		sizes, err := i.uncommitted(ctx, n)
		if err != nil {
			return nil, err
		}
		if len(sizes) > 0 {
			open = append(open, n)
		}
	}
	return open, nil
}

// uncommitted is the sizes of key's uncommitted blocks, in block id order.
func (i *azureInspector) uncommitted(ctx context.Context, key string) ([]int64, error) {
	bl, err := i.c.NewBlockBlobClient(key).GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type blk struct {
		id   string
		size int64
	}
	var blocks []blk
	for _, b := range bl.UncommittedBlocks {
		id, _ := base64.StdEncoding.DecodeString(deref(b.Name))
		var size int64
		if b.Size != nil {
			size = *b.Size
		}
		blocks = append(blocks, blk{string(id), size})
	}
	slices.SortFunc(blocks, func(a, b blk) int { return strings.Compare(a.id, b.id) })
	sizes := make([]int64, len(blocks))
	for j, b := range blocks {
		sizes[j] = b.size
	}
	return sizes, nil
}

// StartUpload stages one small block and never commits it.
func (i *azureInspector) StartUpload(ctx context.Context, key string) error {
	id := base64.StdEncoding.EncodeToString([]byte("dead-run-000001"))
	_, err := i.c.NewBlockBlobClient(key).StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader([]byte("x"))), nil)
	return err
}

func (i *azureInspector) Parts(ctx context.Context, key, _ string) ([]int64, error) {
	return i.uncommitted(ctx, key)
}

// WrongChecksums: a wrong Content-MD5 on a Put Blob and on a Put Block.
func (i *azureInspector) WrongChecksums() []WrongChecksum {
	bad := func(data []byte) []byte {
		sum := md5.Sum(data)
		sum[0] ^= 1
		return sum[:]
	}
	return []WrongChecksum{
		{Name: "Put Blob Content-MD5", Send: func(ctx context.Context, key string, data []byte) error {
			_, err := i.c.NewBlockBlobClient(key).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)),
				&blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(bad(data))})
			return err
		}},
		{Name: "Put Block Content-MD5", Send: func(ctx context.Context, key string, data []byte) error {
			bb := i.c.NewBlockBlobClient(key)
			id := base64.StdEncoding.EncodeToString([]byte("wrong-md5-000001"))
			_, err := bb.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(data)),
				&blockblob.StageBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(bad(data))})
			if err == nil { // not verified: commit it, to see what was stored
				_, err = bb.CommitBlockList(ctx, []string{id}, nil)
				if err == nil {
					return nil
				}
				return fmt.Errorf("commit: %w", err)
			}
			return err
		}},
	}
}
