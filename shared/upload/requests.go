package upload

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
)

// The calls that end an upload: the protocol's Complete, or its Put for an
// object of at most one part.

func (w *Writer) putObject() error {
	var body io.ReadSeeker = bytes.NewReader(nil)
	var pb *partBody
	if w.buf != nil {
		w.sha.Write(w.buf.b[:w.fill]) // the only part: none was handed off
		pb = newPartBody(w.buf, w.fill)
		body = pb
	}
	w.crc = crc32cCombine(w.crc, w.partCRC, int64(w.fill)) // w.crc was 0
	c, err := w.proto.Put(w.ctx, body, int64(w.fill), w.crc)
	if err != nil {
		if pb != nil {
			pb.abandon(w.arena) // see startPart
			w.buf = nil
		}
		return fmt.Errorf("upload: put %s: %w", w.proto.Where(), err)
	}
	w.setResult(0, c)
	return nil
}

// complete sends the last part, waits for all parts and completes.
func (w *Writer) complete() error {
	// The buffer is never empty here: a full part is only sent once more
	// data follows it.
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		return w.check()
	}
	w.startPart()
	w.wg.Wait()
	if err := w.check(); err != nil {
		return err
	}
	parts := w.nextPart - 1
	c, err := w.proto.Complete(w.ctx, parts, w.written.Load(), w.crc)
	if err != nil {
		return fmt.Errorf("upload: complete the upload of %s: %w", w.proto.Where(), err)
	}
	w.setResult(int(parts), c)
	return nil
}

func (w *Writer) setResult(parts int, c Committed) {
	w.result = Result{
		Key:         c.Key,
		Bytes:       w.written.Load(),
		CRC32C:      crcBase64(w.crc),
		CRC32CValue: w.crc,
		SHA256:      hex.EncodeToString(w.sha.Sum(nil)),
		Parts:       parts,
		ETag:        c.ETag,
		VersionID:   c.VersionID,
	}
}

// CRCBase64 is a CRC32C in the form S3 and GCS show it: base64 of its
// big-endian bytes.
func CRCBase64(v uint32) string { return crcBase64(v) }

func crcBase64(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return base64.StdEncoding.EncodeToString(b[:])
}
