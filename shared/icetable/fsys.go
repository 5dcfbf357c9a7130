package icetable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// Store is the part of a bucket.Bucket the table uses: every request the
// table makes goes through it, so a test counts them and the expected
// bucket owner is sent on each. Keys are relative to the bucket's root.
type Store interface {
	Name() string
	// URI is key's location as the store's readers name it (s3://,
	// gs://, abfss://): what the table's metadata records.
	URI(key string) string
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
	// GetTail reads the last n bytes of the object (all of a shorter one).
	GetTail(ctx context.Context, key string, n int64) ([]byte, error)
	Put(ctx context.Context, key string, body []byte, contentType string) error
	// PutIfAbsent writes only where no object is (If-None-Match: *); an
	// object already there is bucket.ErrExists.
	PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error
	Delete(ctx context.Context, key string) error
}

var _ Store = (*bucket.Bucket)(nil)

// MaxMetadataObjectBytes bounds every read of the table's own files (the
// metadata JSON, manifest lists and manifests): a larger one is refused
// (bucket.ErrTooLarge) rather than held.
const MaxMetadataObjectBytes = 64 << 20

// fsys is iceberg-go's file system over a Store, for one call's context:
// the library reads and writes the table's metadata through it and never
// lists. Paths are the store's URIs of keys (Store.URI: s3://<bucket>/<key>
// on S3), or bare keys.
type fsys struct {
	ctx   context.Context
	store Store
}

var (
	_ iceio.IO          = (*fsys)(nil)
	_ iceio.ReadFileIO  = (*fsys)(nil)
	_ iceio.WriteFileIO = (*fsys)(nil)
)

// uri is the URI of key in store.
func uri(store Store, key string) string { return store.URI(key) }

// key is the bucket key of a path the library passes: the URI's path, or
// the path itself when it names no scheme. A URI of another bucket (or
// store) is refused.
func (f *fsys) key(name string) (string, error) {
	if k, ok := strings.CutPrefix(name, f.store.URI("")); ok {
		return k, nil
	}
	if rest, ok := strings.CutPrefix(name, "s3a://"); ok && strings.HasPrefix(f.store.URI(""), "s3://") {
		if b, k, _ := strings.Cut(rest, "/"); b == f.store.Name() {
			return k, nil
		}
	}
	if !strings.Contains(name, "://") {
		return strings.TrimPrefix(name, "/"), nil
	}
	return "", fmt.Errorf("icetable: path %s is outside bucket %s", name, f.store.URI(""))
}

func (f *fsys) pathError(op, name string, err error) error {
	if bucket.IsNotFound(err) {
		err = errors.Join(fs.ErrNotExist, err)
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (f *fsys) ReadFile(name string) ([]byte, error) {
	k, err := f.key(name)
	if err != nil {
		return nil, f.pathError("open", name, err)
	}
	b, err := f.store.Get(f.ctx, k, MaxMetadataObjectBytes)
	if err != nil {
		return nil, f.pathError("open", name, err)
	}
	return b, nil
}

func (f *fsys) Open(name string) (iceio.File, error) {
	b, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &file{Reader: bytes.NewReader(b), name: name, size: int64(len(b))}, nil
}

func (f *fsys) Remove(name string) error {
	k, err := f.key(name)
	if err != nil {
		return f.pathError("remove", name, err)
	}
	if err := f.store.Delete(f.ctx, k); err != nil {
		return f.pathError("remove", name, err)
	}
	return nil
}

func (f *fsys) WriteFile(name string, p []byte) error {
	k, err := f.key(name)
	if err != nil {
		return f.pathError("write", name, err)
	}
	if err := f.store.Put(f.ctx, k, p, contentType(k)); err != nil {
		return f.pathError("write", name, err)
	}
	return nil
}

func (f *fsys) Create(name string) (iceio.FileWriter, error) {
	if _, err := f.key(name); err != nil {
		return nil, f.pathError("create", name, err)
	}
	return &writer{f: f, name: name}, nil
}

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	case strings.HasSuffix(key, ".avro"):
		return "avro/binary"
	}
	return "application/octet-stream"
}

// file is an object read whole: manifests and manifest lists are small.
type file struct {
	*bytes.Reader
	name string
	size int64
}

func (f *file) Close() error               { return nil }
func (f *file) Stat() (fs.FileInfo, error) { return info{name: f.name, size: f.size}, nil }

type info struct {
	name string
	size int64
}

func (i info) Name() string       { return i.name[strings.LastIndexByte(i.name, '/')+1:] }
func (i info) Size() int64        { return i.size }
func (i info) Mode() fs.FileMode  { return 0o444 }
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return false }
func (i info) Sys() any           { return nil }

// writer buffers a file the library writes and puts it on Close: the
// object appears whole or not at all.
type writer struct {
	f    *fsys
	name string
	buf  bytes.Buffer
	done bool
}

func (w *writer) Write(p []byte) (int, error)         { return w.buf.Write(p) }
func (w *writer) ReadFrom(r io.Reader) (int64, error) { return w.buf.ReadFrom(r) }
func (w *writer) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	return w.f.WriteFile(w.name, w.buf.Bytes())
}
