package icetable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
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
	// Head reads an object's size; a missing one is bucket.ErrNotFound.
	Head(ctx context.Context, key string) (bucket.Info, error)
	Put(ctx context.Context, key string, body []byte, contentType string) error
	// PutIfAbsent writes only where no object is (If-None-Match: *); an
	// object already there is bucket.ErrExists.
	PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error
	Delete(ctx context.Context, key string) error
	// List lists the objects under prefix, at most limit of them (more is
	// bucket.ErrTooMany): a load whose version hint cannot be used lists
	// the table's metadata folder once, nothing else does.
	List(ctx context.Context, prefix string, limit int) ([]bucket.Object, error)
}

var _ Store = (*bucket.Bucket)(nil)

// fsys is iceberg-go's file system over a Store, for one call's context:
// the library reads and writes the table's metadata through it and never
// lists. Paths are the store's URIs of keys (Store.URI: s3://<bucket>/<key>
// on S3), or bare keys. Everything the
// table's metadata names is the customer's bucket's content, so nothing it
// names is trusted (scope): the library reads only under the table's
// folder, writes and deletes only in its metadata/ folder, and one
// commit's reads are counted against the table's Limits.
type fsys struct {
	ctx   context.Context
	store Store
	scope *scope
}

var (
	_ iceio.IO          = (*fsys)(nil)
	_ iceio.ReadFileIO  = (*fsys)(nil)
	_ iceio.WriteFileIO = (*fsys)(nil)
)

// scope is where one table's files may be, and what one commit (one load
// and what is built on it) has read so far.
type scope struct {
	// base is the bucket's URI (Store.URI of ""), which every path the
	// library passes must begin with, and name the bucket's name.
	base, name string
	// table is the table's folder, metadata its metadata/ folder, as key
	// prefixes ending in "/".
	table, metadata string
	limits          Limits

	mu                          sync.Mutex
	manifestLists, manifests    int
	readBytes, avroDecodedBytes int64
}

func newScope(store Store, location string, limits Limits) *scope {
	return &scope{base: store.URI(""), name: store.Name(), table: location + "/", metadata: location + "/" + MetadataDir + "/", limits: limits.orDefault()}
}

// uri is the URI of key in store.
func uri(store Store, key string) string { return store.URI(key) }

// uri is key's URI in the scope's bucket, for messages.
func (s *scope) uri(key string) string { return s.base + key }

// key is the bucket key of a path the library passes: the URI's path, or
// the path itself when it names no scheme. A path of another bucket, or
// with an empty, "." or ".." segment (which some stores resolve), is
// outside every table (ErrOutsideTable).
func (s *scope) key(name string) (string, error) {
	k, ok := strings.CutPrefix(name, s.base)
	if !ok {
		if rest, isS3A := strings.CutPrefix(name, "s3a://"); isS3A && strings.HasPrefix(s.base, "s3://") {
			b, kk, _ := strings.Cut(rest, "/")
			if b != s.name {
				return "", fmt.Errorf("%w: %s is in another bucket than %s", ErrOutsideTable, name, s.base)
			}
			k, ok = kk, true
		}
	}
	if !ok {
		if strings.Contains(name, "://") {
			return "", fmt.Errorf("%w: %s is in another bucket than %s", ErrOutsideTable, name, s.base)
		}
		k = strings.TrimPrefix(name, "/")
	}
	for seg := range strings.SplitSeq(k, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "\\\x00") {
			return "", fmt.Errorf("%w: %s has an empty, . or .. segment", ErrOutsideTable, name)
		}
	}
	return k, nil
}

// readable is the key of name if the table may read it: under its folder.
func (s *scope) readable(name string) (string, error) {
	k, err := s.key(name)
	if err == nil && !strings.HasPrefix(k, s.table) {
		err = fmt.Errorf("%w: %s is outside the table's folder %s", ErrOutsideTable, name, s.uri(s.table))
	}
	return k, err
}

// writable is the key of name if the table may write or delete it: a file
// of its metadata/ folder itself.
func (s *scope) writable(name string) (string, error) {
	k, err := s.key(name)
	if err == nil && (!strings.HasPrefix(k, s.metadata) || strings.Contains(k[len(s.metadata):], "/")) {
		err = fmt.Errorf("%w: %s is not a file of the table's metadata folder %s", ErrOutsideTable, name, s.uri(s.metadata))
	}
	return k, err
}

// isManifestList reports whether a metadata file's name is a manifest
// list's (snap-<snapshot id>-<attempt>-<uuid>.avro, as the library names
// them); other .avro files are manifests.
func isManifestList(key string) bool {
	return strings.HasPrefix(key[strings.LastIndexByte(key, '/')+1:], "snap-")
}

// admit charges a read of key to the commit before it is made: a manifest
// list or a manifest past the commit's count is ErrTableLimit naming the
// object and the limit, and is not read.
func (s *scope) admit(key string) error {
	if !strings.HasSuffix(key, ".avro") {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if isManifestList(key) {
		if s.manifestLists++; s.manifestLists > s.limits.ManifestLists {
			return fmt.Errorf("%w: %s would be manifest list %d of one commit; it may read %d", ErrTableLimit, s.uri(key), s.manifestLists, s.limits.ManifestLists)
		}
		return nil
	}
	if s.manifests++; s.manifests > s.limits.Manifests {
		return fmt.Errorf("%w: %s would be manifest %d of one commit; it may read %d", ErrTableLimit, s.uri(key), s.manifests, s.limits.Manifests)
	}
	return nil
}

// count charges n bytes read of key to the commit: past its total it is
// ErrTableLimit naming the object and the limit.
func (s *scope) count(key string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readBytes += n; s.readBytes > s.limits.CommitReadBytes {
		return fmt.Errorf("%w: reading %s passes the %d bytes of table metadata one commit may read", ErrTableLimit, s.uri(key), s.limits.CommitReadBytes)
	}
	return nil
}

// decoded charges n decompressed Avro bytes to the commit.
func (s *scope) decoded(key string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.avroDecodedBytes += n; s.avroDecodedBytes > s.limits.CommitReadBytes {
		return fmt.Errorf("%w: %s: its Avro blocks would pass the %d decompressed bytes one commit may read", ErrAvroTooLarge, s.uri(key), s.limits.CommitReadBytes)
	}
	return nil
}

// storeError is a request to the store that failed (not a missing or too
// large object): the attempt fails and is retried, the table is not broken.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

func (f *fsys) pathError(op, name string, err error) error {
	if bucket.IsNotFound(err) {
		err = errors.Join(fs.ErrNotExist, err)
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// ReadFile reads a file of the table: a manifest list or manifest (each at
// most Limits.ObjectBytes, counted against the commit's reads, its Avro
// blocks checked before the library decodes them), or a data file.
func (f *fsys) ReadFile(name string) ([]byte, error) {
	k, err := f.scope.readable(name)
	if err != nil {
		return nil, f.pathError("open", name, broken(name, err))
	}
	limit, meta := f.scope.limits.ObjectBytes, strings.HasPrefix(k, f.scope.metadata)
	if !meta {
		limit = MaxDataFileReadBytes
	} else if err := f.scope.admit(k); err != nil {
		return nil, f.pathError("open", name, broken(k, err))
	}
	b, err := f.store.Get(f.ctx, k, limit)
	switch {
	case errors.Is(err, bucket.ErrTooLarge):
		err = broken(k, fmt.Errorf("%w: %w", ErrTableLimit, err))
	case bucket.IsNotFound(err):
		// The metadata names a file that is not there: no retry brings it.
		err = broken(k, err)
	case err != nil:
		err = &storeError{err}
	}
	if err == nil && meta {
		if err = f.scope.count(k, int64(len(b))); err == nil && strings.HasSuffix(k, ".avro") {
			err = f.scope.checkAvro(k, b)
		}
		if err != nil {
			err = broken(k, err)
		}
	}
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
	k, err := f.scope.writable(name)
	if err != nil {
		return f.pathError("remove", name, broken(name, err))
	}
	if err := f.store.Delete(f.ctx, k); err != nil {
		return f.pathError("remove", name, &storeError{err})
	}
	return nil
}

func (f *fsys) WriteFile(name string, p []byte) error {
	k, err := f.scope.writable(name)
	if err != nil {
		return f.pathError("write", name, broken(name, err))
	}
	if err := f.store.Put(f.ctx, k, p, contentType(k)); err != nil {
		return f.pathError("write", name, &storeError{err})
	}
	return nil
}

func (f *fsys) Create(name string) (iceio.FileWriter, error) {
	if _, err := f.scope.writable(name); err != nil {
		return nil, f.pathError("create", name, broken(name, err))
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
