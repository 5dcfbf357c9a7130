package buckettest

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/upload"
)

// WrapDriver returns d with f's hooks around every call of the driver and
// of the upload protocols it makes, each named by the S3 call it stands
// for: Put as PutObject, DeleteKeys as DeleteObjects, AbortIncomplete as
// ListMultipartUploads, a protocol's Start as CreateMultipartUpload, Part as
// UploadPart, Complete as CompleteMultipartUpload, Abort as
// AbortMultipartUpload. So the suite's faults and counts read the same on
// every store. Owner is always nil: only S3 has an expected owner.
func (f *Faults) WrapDriver(d bucket.Driver) bucket.Driver { return &faultyDriver{d: d, f: f} }

type faultyDriver struct {
	d bucket.Driver
	f *Faults
}

var uploadSeq atomic.Int64

// call runs fn between the hooks.
func (f *Faults) call(c Call, fn func() error) error {
	if err := f.runBefore(&c); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	return f.runAfter(c)
}

func (w *faultyDriver) Name() string             { return w.d.Name() }
func (w *faultyDriver) URI(key string) string    { return w.d.URI(key) }
func (w *faultyDriver) Classify(err error) error { return w.d.Classify(err) }

func (w *faultyDriver) Put(ctx context.Context, key string, body []byte, o bucket.PutOptions) error {
	return w.f.call(Call{Op: OpPut, Key: key}, func() error { return w.d.Put(ctx, key, body, o) })
}

func (w *faultyDriver) Get(ctx context.Context, key string, r bucket.Range) (io.ReadCloser, int64, error) {
	var body io.ReadCloser
	var size int64
	err := w.f.call(Call{Op: OpGet, Key: key}, func() error {
		var err error
		body, size, err = w.d.Get(ctx, key, r)
		return err
	})
	if err != nil && body != nil {
		body.Close()
		body = nil
	}
	return body, size, err
}

func (w *faultyDriver) Head(ctx context.Context, key string) (bucket.Info, error) {
	var info bucket.Info
	err := w.f.call(Call{Op: OpHead, Key: key}, func() error {
		var err error
		info, err = w.d.Head(ctx, key)
		return err
	})
	return info, err
}

func (w *faultyDriver) Delete(ctx context.Context, key string) error {
	return w.f.call(Call{Op: OpDelete, Key: key}, func() error { return w.d.Delete(ctx, key) })
}

func (w *faultyDriver) List(ctx context.Context, prefix string, fn func(bucket.Object) error) error {
	return w.f.call(Call{Op: OpList, Key: prefix}, func() error { return w.d.List(ctx, prefix, fn) })
}

func (w *faultyDriver) Dirs(ctx context.Context, prefix string, fn func(string) error) error {
	return w.f.call(Call{Op: OpList, Key: prefix}, func() error { return w.d.Dirs(ctx, prefix, fn) })
}

func (w *faultyDriver) DeleteKeys(ctx context.Context, keys []string) error {
	return w.f.call(Call{Op: OpDeleteObjects, Keys: keys}, func() error { return w.d.DeleteKeys(ctx, keys) })
}

func (w *faultyDriver) AbortIncomplete(ctx context.Context, prefix string, keys []string) ([]string, error) {
	var out []string
	err := w.f.call(Call{Op: OpListUploads, Key: prefix}, func() error {
		var err error
		out, err = w.d.AbortIncomplete(ctx, prefix, keys)
		return err
	})
	return out, err
}

func (w *faultyDriver) Protocol(key string, opts upload.Options) (upload.Protocol, upload.Options) {
	p, opts := w.d.Protocol(key, opts)
	return &faultyProtocol{p: p, f: w.f, key: key, id: fmt.Sprintf("upload-%d", uploadSeq.Add(1))}, opts
}

type faultyProtocol struct {
	p   upload.Protocol
	f   *Faults
	key string
	id  string
}

func (w *faultyProtocol) Where() string { return w.p.Where() }

func (w *faultyProtocol) Put(ctx context.Context, body io.ReadSeeker, size int64, crc uint32) (upload.Committed, error) {
	var c upload.Committed
	err := w.f.call(Call{Op: OpPut, Key: w.key}, func() error {
		var err error
		c, err = w.p.Put(ctx, body, size, crc)
		return err
	})
	return c, err
}

func (w *faultyProtocol) Start(ctx context.Context) error {
	return w.f.call(Call{Op: OpCreate, Key: w.key, UploadID: w.id}, func() error { return w.p.Start(ctx) })
}

func (w *faultyProtocol) Part(ctx context.Context, num int32, body io.ReadSeeker, size int64, crc uint32) error {
	return w.f.call(Call{Op: OpUploadPart, Key: w.key, UploadID: w.id, Part: num, Size: size}, func() error {
		return w.p.Part(ctx, num, body, size, crc)
	})
}

func (w *faultyProtocol) Complete(ctx context.Context, parts int32, size int64, crc uint32) (upload.Committed, error) {
	var c upload.Committed
	err := w.f.call(Call{Op: OpComplete, Key: w.key, UploadID: w.id}, func() error {
		var err error
		c, err = w.p.Complete(ctx, parts, size, crc)
		return err
	})
	return c, err
}

func (w *faultyProtocol) Abort(ctx context.Context) error {
	return w.f.call(Call{Op: OpAbortMultipart, Key: w.key, UploadID: w.id}, func() error { return w.p.Abort(ctx) })
}
