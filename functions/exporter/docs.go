package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
)

// Object metadata of the bucket documents (README.md, _schemas/*.json).
const (
	// metaSHA256 is on every document: the hex SHA-256 of its body.
	metaSHA256 = "daybook-sha256"
	// metaDocsSHA256 is on the README, written last: bucketdocs.Hash of
	// the whole set, so one HEAD of the README tells whether every
	// document is current.
	metaDocsSHA256 = "daybook-docs-sha256"
)

// docsTimeout bounds the documents' writes after a commit, so they never
// eat into the time the ledger writes need.
const docsTimeout = 15 * time.Second

// DocsRecheck is how long a function trusts documents it found or wrote
// current before it HEADs the README again: a warm function checks an
// account's documents once in that time, not at every export, and a
// document replaced by hand is put back within it.
const DocsRecheck = time.Hour

// docsSeen remembers, per destination, the documents' set hash the
// function last found or wrote, and when (the Exporter's clock). Safe for
// concurrent use; the zero value is empty, and a nil one remembers
// nothing.
type docsSeen struct {
	mu sync.Mutex
	m  map[string]docsMark
}

type docsMark struct {
	set string
	at  time.Time
}

// current reports whether set was found or written at key less than
// DocsRecheck before now.
func (d *docsSeen) current(key, set string, now time.Time) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.m[key]
	return ok && m.set == set && now.Sub(m.at) < DocsRecheck && !now.Before(m.at)
}

func (d *docsSeen) note(key, set string, now time.Time) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]docsMark{}
	}
	d.m[key] = docsMark{set: set, at: now}
}

// writeDocs brings the account's bucket documents (bucketdocs) up to date
// after a committed export. When nothing they describe changed, it costs
// nothing if this function found them current within DocsRecheck, else
// one HEAD of the README; otherwise it rewrites each schema document whose
// SHA-256 differs from the stored one, then the README, last, marked with
// the hash of the set; after a document that did not read (rewriteDocs),
// it rewrites them all. The partition is committed when this runs: a
// failure is logged, never returned, and the next export tries again.
//
// The check needs no ledger: the documents are a pure function of the
// catalog and the account, so their hash is all there is to compare, and
// two exporters writing them at once write the same bytes.
func (e *Exporter) writeDocs(ctx context.Context, t *target, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, docsTimeout)
	defer cancel()
	wrote, err := e.putDocs(ctx, t, log)
	if err != nil {
		log.WarnContext(ctx, "bucket documents not written; the next export retries", "error", err.Error(), "written", wrote)
		return
	}
	if wrote > 0 {
		log.InfoContext(ctx, "bucket documents written", "written", wrote)
	}
}

// putDocs writes what changed and returns how many documents it wrote.
func (e *Exporter) putDocs(ctx context.Context, t *target, log *slog.Logger) (int, error) {
	b := t.bucket
	files, err := bucketdocs.Files(e.docsInput(t, log))
	if err != nil {
		return 0, err
	}
	set := bucketdocs.Hash(files)
	readme := files[len(files)-1] // Files puts the README last
	seen, now := t.destination+"\x00"+readme.Key, e.Now()
	if !t.rewriteDocs {
		if e.docs.current(seen, set, now) {
			return 0, nil
		}
		info, err := b.Head(ctx, readme.Key)
		switch {
		case err == nil && info.Metadata[metaDocsSHA256] == set:
			e.docs.note(seen, set, now)
			return 0, nil
		case err != nil && !bucket.IsNotFound(err):
			return 0, err
		}
	}
	wrote := 0
	for _, f := range files[:len(files)-1] {
		if !t.rewriteDocs { // else one of them did not read: their marks say nothing
			info, err := b.Head(ctx, f.Key)
			switch {
			case err == nil && info.Metadata[metaSHA256] == f.SHA256:
				continue
			case err != nil && !bucket.IsNotFound(err):
				return wrote, err
			}
		}
		if err := putDoc(ctx, b, f, nil); err != nil {
			return wrote, err
		}
		wrote++
	}
	if err := putDoc(ctx, b, readme, map[string]string{metaDocsSHA256: set}); err != nil {
		return wrote, err
	}
	e.docs.note(seen, set, now)
	return wrote + 1, nil
}

func putDoc(ctx context.Context, b *bucket.Bucket, f bucketdocs.File, extra map[string]string) error {
	md := map[string]string{metaSHA256: f.SHA256}
	for k, v := range extra {
		md[k] = v
	}
	if err := b.PutWith(ctx, f.Key, f.Body, bucket.PutOptions{ContentType: f.ContentType, Metadata: md}); err != nil {
		return fmt.Errorf("write %s: %w", f.Key, err)
	}
	return nil
}

// docsInput describes what the target's account receives: its enabled
// datasets that this build's catalog declares, in the account's order, and
// how.
func (e *Exporter) docsInput(t *target, log *slog.Logger) bucketdocs.Input {
	a := t.Account
	in := bucketdocs.Input{
		Bucket: a.Destination.Bucket, BaseURI: a.Destination.URI(""), BucketFlag: verifyFlag(a.Destination),
		Store: string(a.Destination.Kind()), AzureAccount: a.Destination.StorageAccount,
		Prefix: t.prefix, Format: t.format, Compression: t.format.Codec(a.Destination.Compression),
		TimeZone: cmp.Or(a.TimeZone, account.DefaultTimeZone), MaxFileBytes: e.Config.maxFileBytes(),
		Iceberg: a.Destination.TableFormat == account.TableFormatIceberg,
	}
	if a.SettleDelay != nil {
		in.SettleDelay = a.SettleDelay.D()
	}
	for _, name := range a.Datasets {
		ds, err := e.Catalog.Get(name)
		if err != nil {
			log.Warn("bucket documents leave out a dataset this build does not declare", "dataset", name)
			continue
		}
		in.Datasets = append(in.Datasets, ds)
	}
	return in
}

// verifyFlag is the destination's bucket as `daybook verify --bucket`
// takes it.
func verifyFlag(d account.Destination) string {
	switch d.Kind() {
	case account.StoreGCS:
		return "gs://" + d.Bucket
	case account.StoreAzure:
		return "az://" + d.StorageAccount + "/" + d.Bucket
	}
	return d.Bucket
}
