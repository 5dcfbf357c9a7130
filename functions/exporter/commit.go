package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Committer holds the calls of the commit protocol (generation.go) that
// touch one partition's folder of a bucket, each one step:
// nextGeneration (begin), removeSuccess (remove _SUCCESS, so readers stop
// trusting the partition), Pending.NewDataFile (write, by one writer or
// several), Pending.removeStale (stale cleanup: every object under the
// partition that is not one of the manifest's data files goes, since S3
// has no rename, and every incomplete multipart upload under it is
// aborted: every data file of this generation is complete by then, so each
// one is an orphan, of a killed run or a CreateMultipartUpload whose
// response was lost and retried, that nobody else would ever abort),
// Pending.writeManifest, Pending.writeScripts and Pending.writeSuccess,
// last.
//
// Invariant: whenever _SUCCESS exists, the data files under the partition
// are exactly those its manifest lists. A step that fails stops the run
// there, leaving no _SUCCESS; the next run's stale cleanup removes what
// this one left. Pending.Abort aborts the data files still being uploaded.
type Committer struct {
	Bucket *bucket.Bucket
	// Partition is the partition's key prefix (layout.PartitionPrefix),
	// ending in "/"; every object of the partition is under it.
	Partition string
	RunID     string
	Now       func() time.Time
	// Expect is what a manifest of the partition must say to be a
	// generation daybook committed there (its Generation is set by
	// Committed): the claim's account, dataset, contract and day, the
	// partition's prefix and data file extension.
	Expect manifest.Expect
}

func (c *Committer) successKey() string  { return c.Partition + layout.SuccessName }
func (c *Committer) manifestKey() string { return c.Partition + layout.ManifestName }

// removeSuccess begins generation: it removes the partition's old
// _SUCCESS, so readers stop trusting the partition.
func (c *Committer) removeSuccess(ctx context.Context, generation int64) (*Pending, error) {
	if err := c.Bucket.Delete(ctx, c.successKey()); err != nil {
		return nil, fmt.Errorf("remove old _SUCCESS: %w", err)
	}
	return &Pending{c: c, generation: generation}, nil
}

// Resume continues a generation that removeSuccess began in an earlier run: a
// day exported in slices (slices.go) begins its generation once, when it is
// planned, then each slice's run writes its data files through a Resume of
// it, and the run of the last slice commits through another.
func (c *Committer) Resume(generation int64) *Pending {
	return &Pending{c: c, generation: generation}
}

// Committed returns the manifest the partition's _SUCCESS commits when that
// is generation, or nil: a resumed generation whose commit finished in a
// run that died before the ledger heard of it is recorded as it is, not
// written again. The bucket is the customer's, so the marker and the
// manifest are believed only when they are that generation of this
// partition: the marker names this partition's manifest, its SHA-256 and
// generation, and the manifest says the claim's account, dataset,
// contract, day and generation and lists only data files of the partition
// (manifest.Check). Anything else is no commit of this generation (nil):
// the run writes the partition again over it.
func (c *Committer) Committed(ctx context.Context, generation int64) (*manifest.Manifest, error) {
	b, err := c.Bucket.Get(ctx, c.successKey(), manifest.MaxSuccessBytes)
	if bucket.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read _SUCCESS: %w", err)
	}
	marker, err := manifest.DecodeSuccess(b)
	if err != nil || marker.Generation != generation || marker.ManifestKey != c.manifestKey() {
		return nil, nil
	}
	body, err := c.Bucket.Get(ctx, c.manifestKey(), manifest.MaxManifestBytes)
	if bucket.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the committed manifest: %w", err)
	}
	if !marker.Matches(body) {
		return nil, nil
	}
	m, err := manifest.Decode(body)
	if err != nil {
		return nil, nil // not a manifest this daybook wrote
	}
	want := c.Expect
	want.Generation = generation
	if m.Check(want) != nil {
		return nil, nil
	}
	return m, nil
}

// nextGeneration is the claimed generation, or one more than the generation
// the partition's current _SUCCESS commits if that is not lower.
func (c *Committer) nextGeneration(ctx context.Context, claimed int64) (int64, error) {
	b, err := c.Bucket.Get(ctx, c.successKey(), manifest.MaxSuccessBytes)
	if bucket.IsNotFound(err) {
		return claimed, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read old _SUCCESS: %w", err)
	}
	old, err := manifest.DecodeSuccess(b)
	if err != nil {
		return claimed, nil // an unreadable marker is replaced; it names no generation to beat
	}
	return ledger.GenerationAfter(claimed, old.Generation, c.Bucket.URI(c.successKey()))
}

// Pending is a generation of a partition between removeSuccess and
// writeSuccess: its old _SUCCESS is gone and its data files are being
// written. NewDataFile may be called from several goroutines.
type Pending struct {
	c          *Committer
	generation int64

	mu    sync.Mutex
	files []*upload.Writer
}

// Generation is the generation this run commits.
func (p *Pending) Generation() int64 { return p.generation }

// NewDataFile returns a Writer streaming the data file at key, which must be
// under the partition. The object carries the generation and run id as
// metadata; opts sets the rest (part size, concurrency, content type). The
// caller closes it (Close commits the object, nothing is visible before) and
// lists it in the generation's manifest.
func (p *Pending) NewDataFile(ctx context.Context, key string, opts upload.Options) *upload.Writer {
	md := maps.Clone(opts.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md["daybook-generation"] = fmt.Sprint(p.generation)
	md["daybook-run-id"] = p.c.RunID
	opts.Metadata = md
	w := p.c.Bucket.NewWriter(ctx, key, opts)
	p.mu.Lock()
	p.files = append(p.files, w)
	p.mu.Unlock()
	return w
}

// errFileOpen is removeStale's refusal while a data file is not committed.
var errFileOpen = errors.New("data file not closed")

// removeStale, once every data file is closed, deletes every object under
// the partition that files does not list and aborts every incomplete
// multipart upload under it.
func (p *Pending) removeStale(ctx context.Context, files []manifest.File) error {
	c := p.c
	p.mu.Lock()
	for _, w := range p.files {
		if w.Result().Key == "" {
			p.mu.Unlock()
			return fmt.Errorf("commit generation %d: %w", p.generation, errFileOpen)
		}
	}
	p.mu.Unlock()
	keep := make(map[string]bool, len(files))
	for _, f := range files {
		keep[f.Key] = true
	}
	if err := c.Bucket.DeleteStale(ctx, c.Partition, keep); err != nil {
		return err
	}
	if _, err := c.Bucket.AbortIncomplete(ctx, c.Partition, layout.DataKeysThrough(c.Partition, slices.Collect(maps.Keys(keep)))); err != nil {
		return fmt.Errorf("abort orphaned uploads: %w", err)
	}
	return nil
}

// writeManifest completes m (Generation, Totals, FinishedAt) and writes
// it; it returns its key and the bytes written.
func (p *Pending) writeManifest(ctx context.Context, m *manifest.Manifest) (key string, body []byte, err error) {
	c := p.c
	m.Generation = p.generation
	m.Sum()
	m.FinishedAt = c.Now().UTC()
	if body, err = m.Encode(); err != nil {
		return "", nil, err
	}
	key = c.manifestKey()
	if err := c.Bucket.Put(ctx, key, body, "application/json"); err != nil {
		return "", nil, fmt.Errorf("write manifest: %w", err)
	}
	return key, body, nil
}

// writeScripts writes the load scripts files (keys are file names under
// _load/), in the order of their names.
func (p *Pending) writeScripts(ctx context.Context, files map[string][]byte) error {
	c := p.c
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := c.Bucket.Put(ctx, c.Partition+layout.LoadDir+"/"+name, files[name], "text/plain; charset=utf-8"); err != nil {
			return fmt.Errorf("write load script %s: %w", name, err)
		}
	}
	return nil
}

// writeSuccess writes _SUCCESS, naming the manifest written at
// manifestKey by its bytes body.
func (p *Pending) writeSuccess(ctx context.Context, m *manifest.Manifest, manifestKey string, body []byte) error {
	c := p.c
	marker := manifest.NewSuccess(m.Generation, m.RunID, manifestKey, body, c.Now())
	if err := c.Bucket.Put(ctx, c.successKey(), marker.Encode(), "application/json"); err != nil {
		return fmt.Errorf("write _SUCCESS: %w", err)
	}
	return nil
}

// Abort gives the generation up: every data file not closed is aborted,
// with a context detached from ctx (inside upload.Writer), so a cancelled
// invocation still cleans up. Files already closed stay until a later
// stale cleanup deletes them; without _SUCCESS no reader trusts them. Abort
// after the commit does nothing.
func (p *Pending) Abort(ctx context.Context) {
	p.mu.Lock()
	files := slices.Clone(p.files)
	p.mu.Unlock()
	for _, w := range files {
		_ = w.Abort(ctx)
	}
}
