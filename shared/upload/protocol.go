package upload

import (
	"context"
	"io"
)

// Protocol is one store's way of writing one object, which a Writer
// drives: either Put once, for an object of at most one part, or Start,
// then Part for every part, then Complete once every Part returned nil. At
// most the Writer's Concurrency parts are in flight, in any order; with
// Concurrency 1 they are sent one at a time, in order. After Start, any
// failure (of a part, of Complete, of the caller's context, or an explicit
// Abort) is followed by exactly one Abort, on a context that is not the
// caller's and has a deadline (AbortTimeout). Nothing is visible at the key
// until Put or Complete returns nil.
//
// Bodies are the Writer's part buffers: a method must not read a body
// after it returns (the transport of a failed request may; the Writer then
// keeps the buffer until the body is unreachable). crc is the CRC32C of the
// bytes; size their number.
type Protocol interface {
	// Where names the object in errors, as a URI (s3://bucket/key).
	Where() string
	// Put stores the whole object in one request.
	Put(ctx context.Context, body io.ReadSeeker, size int64, crc uint32) (Committed, error)
	// Start begins an upload in parts.
	Start(ctx context.Context) error
	// Part uploads part num (numbered from 1).
	Part(ctx context.Context, num int32, body io.ReadSeeker, size int64, crc uint32) error
	// Complete commits parts 1..parts as the object: size bytes whose
	// CRC32C is crc.
	Complete(ctx context.Context, parts int32, size int64, crc uint32) (Committed, error)
	// Abort abandons the upload Start began, so that none of it is ever
	// visible; what the store keeps of it meanwhile is the protocol's to
	// say.
	Abort(ctx context.Context) error
}

// Committed is what a store says of an object it committed.
type Committed struct {
	// Key is the object's key in its bucket.
	Key string
	// ETag and VersionID are as the store returned them (empty when it
	// returns none).
	ETag, VersionID string
}
