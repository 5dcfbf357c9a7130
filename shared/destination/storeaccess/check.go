package storeaccess

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
	"github.com/daybook-dev/daybook/shared/upload"
)

// The connection test of a GCS or Azure destination: the calls an export
// makes, through the one bucket interface every store's driver serves, each
// step naming what it needs in the store's own terms and, on failure, what
// to grant (the store's Explain). It is the one connection test of GCS and
// Azure destinations, destination.CheckConnection's counterpart; the S3
// one keeps calling the S3 API directly.

// StoreBucket is what CheckStore calls on the bucket, with *bucket.Bucket's
// signatures (any store's driver behind it, with the destination's
// encryption and tags).
type StoreBucket interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
	PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error
	List(ctx context.Context, prefix string, limit int) ([]bucket.Object, error)
	Delete(ctx context.Context, key string) error
	NewWriter(ctx context.Context, key string, opts upload.Options) *upload.Writer
}

var _ StoreBucket = (*bucket.Bucket)(nil)

// probeListLimit bounds the test's listing of its own object's key: the
// bucket is the customer's, and what else sits under that key is not ours
// to hold.
const probeListLimit = 100

// StoreProbe is a store's part of the connection test.
type StoreProbe struct {
	// Where names the bucket or container in messages.
	Where string
	// Needs is what each step needs, by step: the permission or role.
	Needs StepNeeds
	// StartAbort starts an upload in parts of key and abandons it, as an
	// export's failed upload does; nil is the bucket's own (a Writer given
	// more than a part, then aborted: GCS's resumable session cancelled,
	// Azure's staged block left uncommitted).
	StartAbort func(ctx context.Context, key string) error
	// Explain says a failed call in words naming what to grant; "" when it
	// does not know the error (gcpauth.Explain, azureauth.Explain).
	Explain func(error) string
}

// StepNeeds names what each step of the test needs.
type StepNeeds struct {
	Write, Read, Upload, CreateIfAbsent, List, Delete string
}

// ProbeOf is the probe of d, a GCS or Azure destination: grant names
// daybook's side (its exporter role and issuer, when known) in what
// Explain says to grant.
func ProbeOf(d account.Destination, grant StoreGrant) (StoreProbe, error) {
	switch d.Kind() {
	case account.StoreGCS:
		t := gcpauth.Target{Bucket: d.Bucket}
		if d.GCS != nil {
			t.Access = *d.GCS
			if grant.ExporterRole != "" && d.GCS.WorkloadIdentityProvider != "" {
				t.Principal = gcpauth.PrincipalSet(d.GCS.WorkloadIdentityProvider, grant.ExporterRole)
			}
		}
		return GCSProbe(t), nil
	case account.StoreAzure:
		t := azureauth.Target{StorageAccount: d.StorageAccount, Container: d.Bucket, Issuer: grant.Issuer, Subject: grant.ExporterRole}
		if d.Azure != nil {
			t.Access = *d.Azure
		}
		return AzureProbe(t), nil
	}
	return StoreProbe{}, fmt.Errorf("%s: an S3 destination's connection test is destination.CheckConnection", d.URI(""))
}

// GCSProbe is the probe of a GCS bucket.
func GCSProbe(t gcpauth.Target) StoreProbe {
	return StoreProbe{
		Where: "gs://" + t.Bucket,
		Needs: StepNeeds{Write: "storage.objects.create", Read: "storage.objects.get",
			Upload:         "storage.multipartUploads.create, storage.multipartUploads.abort",
			CreateIfAbsent: "storage.objects.create (ifGenerationMatch=0)", List: "storage.objects.list", Delete: "storage.objects.delete"},
		Explain: func(err error) string { return gcpauth.Explain(err, t) },
	}
}

// AzureProbe is the probe of an Azure container.
func AzureProbe(t azureauth.Target) StoreProbe {
	const blobs = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/"
	return StoreProbe{
		Where: "container " + t.Container + " of storage account " + t.StorageAccount,
		Needs: StepNeeds{Write: blobs + "write", Read: blobs + "read", Upload: blobs + "write (Put Block)",
			CreateIfAbsent: blobs + "write (If-None-Match: *)", List: blobs + "read (List Blobs)", Delete: blobs + "delete"},
		Explain: func(err error) string { return azureauth.Explain(err, t) },
	}
}

// CheckStore is the connection test of a GCS or Azure destination (`daybook
// account test`): it writes a small object under prefix, reads it back,
// starts and abandons an upload, checks that a create-if-absent write of
// the same key is refused (Iceberg commits rely on it), lists it and
// deletes it. Every step runs after a failure, so the report names each
// missing permission. A bucket or container that does not exist is an
// error wrapping bucket.ErrNoSuchBucket.
func CheckStore(ctx context.Context, b StoreBucket, p StoreProbe, prefix string, now time.Time) ([]destination.Check, error) {
	if p.Explain == nil {
		return nil, errors.New("connection test: the store's probe lacks Explain")
	}
	if p.StartAbort == nil {
		p.StartAbort = func(ctx context.Context, key string) error {
			w := b.NewWriter(ctx, key, upload.Options{PartSize: upload.MinPartSize})
			if _, err := w.Write(make([]byte, upload.MinPartSize+1)); err != nil {
				return err
			}
			return w.Abort(ctx)
		}
	}
	missing := false
	key := strings.TrimSuffix(prefix, "/") + fmt.Sprintf("/_daybook_connection_test_%d", now.UnixNano())
	body := []byte("daybook connection test\n")
	var checks []destination.Check
	run := func(step, need string, fn func() error) {
		c := destination.Check{Step: step, Permission: need, OK: true}
		if err := fn(); err != nil {
			missing = missing || errors.Is(err, bucket.ErrNoSuchBucket)
			c.OK = false
			c.Problem = p.Explain(err)
			if c.Problem == "" {
				c.Problem = err.Error()
			}
		}
		checks = append(checks, c)
	}
	run("write a small object", p.Needs.Write, func() error { return b.Put(ctx, key, body, "text/plain") })
	run("read it back", p.Needs.Read, func() error {
		got, err := b.Get(ctx, key, int64(len(body)))
		if err == nil && string(got) != string(body) {
			return fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(body))
		}
		return err
	})
	run("start and abandon an upload", p.Needs.Upload, func() error { return p.StartAbort(ctx, key+".upload") })
	run("a create-if-absent write of an existing object is refused", p.Needs.CreateIfAbsent, func() error {
		switch err := b.PutIfAbsent(ctx, key, body, "text/plain"); {
		case errors.Is(err, bucket.ErrExists):
			return nil
		case err == nil:
			return errCreateIfAbsent
		default:
			return err
		}
	})
	run("list the prefix", p.Needs.List, func() error {
		objs, err := b.List(ctx, key, probeListLimit)
		if err == nil && len(objs) == 0 {
			return errors.New("the listing does not show the object just written")
		}
		return err
	})
	run("delete the test object", p.Needs.Delete, func() error { return b.Delete(ctx, key) })
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c.Permission)
		}
	}
	switch {
	case missing:
		return checks, fmt.Errorf("destination %s: %w", p.Where, bucket.ErrNoSuchBucket)
	case len(failed) > 0:
		return checks, fmt.Errorf("destination %s/%s is missing %s", p.Where, prefix, strings.Join(failed, "; "))
	}
	return checks, nil
}

// errCreateIfAbsent: the store overwrote an object a create-if-absent write
// named.
var errCreateIfAbsent = errors.New("the store overwrote an existing object on a create-if-absent write: Iceberg commits need it refused")
