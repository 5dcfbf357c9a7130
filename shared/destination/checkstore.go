package destination

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/upload"
)

// storePermissions names, per step of CheckBucket, what a GCS or Azure
// destination's identity needs for it.
var storePermissions = map[account.StoreKind]map[string]string{
	account.StoreGCS: {
		"write": "storage.objects.create", "read": "storage.objects.get", "upload": "storage.objects.create",
		"create-if-absent": "storage.objects.create", "list": "storage.objects.list", "delete": "storage.objects.delete",
	},
	account.StoreAzure: {
		"write": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write", "read": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
		"upload": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write", "create-if-absent": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
		"list": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read", "delete": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete",
	},
}

// roleHint says what grants a store's permissions.
var roleHint = map[account.StoreKind]string{
	account.StoreGCS:   "grant the service account daybook acts as roles/storage.objectAdmin on the bucket",
	account.StoreAzure: "assign daybook's identity Storage Blob Data Contributor on the container",
}

// CheckBucket is the connection test of a destination on GCS or Azure,
// through its Bucket (with its encryption and tags): write a small object
// and read it back, start an upload in parts and abort it, refuse a
// create-if-absent on the existing object, list the prefix, delete the
// object. Every step runs even after a failure, each naming what it needs.
func CheckBucket(ctx context.Context, b *bucket.Bucket, kind account.StoreKind, prefix string, now time.Time) ([]Check, error) {
	key := strings.TrimSuffix(prefix, "/") + fmt.Sprintf("/_daybook_connection_test_%d", now.UnixNano())
	perms := storePermissions[kind]
	var checks []Check
	run := func(step, perm string, fn func() error) {
		c := Check{Step: step, Permission: perms[perm], OK: true}
		if err := fn(); err != nil {
			c.OK = false
			switch {
			case errors.Is(err, bucket.ErrAccessDenied):
				c.Problem = fmt.Sprintf("access denied: %s needs %s (%s)", b.URI(""), perms[perm], roleHint[kind])
			case errors.Is(err, bucket.ErrNoSuchBucket):
				c.Problem = fmt.Sprintf("%s does not exist", b.URI(""))
			default:
				c.Problem = err.Error()
			}
		}
		checks = append(checks, c)
	}
	body := []byte("daybook connection test\n")
	run("write a small object", "write", func() error { return b.Put(ctx, key, body, "text/plain") })
	run("read it back", "read", func() error {
		got, err := b.Get(ctx, key, int64(len(body)))
		if err == nil && !bytes.Equal(got, body) {
			err = errors.New("read back other bytes than written")
		}
		return err
	})
	run("start and abort an upload in parts", "upload", func() error {
		w := b.NewWriter(ctx, key+".parts", upload.Options{PartSize: upload.MinPartSize})
		if _, err := w.Write(make([]byte, upload.MinPartSize+1)); err != nil {
			return err
		}
		return w.Abort(ctx)
	})
	run("refuse a create-if-absent on the existing object", "create-if-absent", func() error {
		err := b.PutIfAbsent(ctx, key, body, "text/plain")
		if errors.Is(err, bucket.ErrExists) {
			return nil
		}
		if err == nil {
			return errors.New("the store wrote over an existing object: Iceberg commits would not be safe")
		}
		return err
	})
	run("list the prefix", "list", func() error { _, err := b.List(ctx, key); return err })
	run("delete the test object", "delete", func() error { return b.Delete(ctx, key) })
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c.Permission)
		}
	}
	if len(failed) > 0 {
		return checks, fmt.Errorf("destination %s is missing %s", b.URI(prefix), strings.Join(failed, ", "))
	}
	return checks, nil
}
