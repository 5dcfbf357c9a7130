package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/upload"
)

// LedgerAPI is the part of the ledger the exporter uses. Every write is
// conditional on the claim token: a lost claim is ledger.ErrClaimLost.
type LedgerAPI interface {
	GetAccount(ctx context.Context, id string) (account.Account, error)
	// ClaimManual claims a row for a manual request, creating it if absent;
	// ledger.ErrBusy means the row is running and a re-run was recorded,
	// ledger.ErrServed (a *ledger.ServedError, with the row) that the
	// request (its id) was taken before.
	ClaimManual(ctx context.Context, key partition.Key, req ledger.ManualRequest) (ledger.Claim, error)
	// Start marks a claimed job as started, once: a second delivery of the
	// same job gets ledger.ErrClaimLost.
	Start(ctx context.Context, key partition.Key, token string) (ledger.Claim, error)
	// NoteCommitted records a generation found committed in the bucket
	// without a Complete, so no later run reuses it (conditional on the token).
	NoteCommitted(ctx context.Context, key partition.Key, token string, generation int64) error
	Complete(ctx context.Context, key partition.Key, token string, res ledger.Result) (ledger.Row, error)
	Fail(ctx context.Context, key partition.Key, token string, cause error) (ledger.Row, error)
	// Get reads one row (strongly consistent), or ledger.ErrNotFound; the
	// delivery manifest is built from these reads.
	Get(ctx context.Context, key partition.Key) (ledger.Row, error)
	// IssuedToken is what the ledger handed out token for (a job, a slice
	// plan), or ledger.ErrNotFound for a token the partition never had: a
	// refused message is a redelivery or a forgery.
	IssuedToken(ctx context.Context, key partition.Key, token string) (ledger.Issued, error)
	// ClearReexportRequest takes back the note of a re-export request
	// (ledger.NoteReexportRequested) from a day whose request is refused, so
	// the day no longer shows a request that will never run; the zero note
	// takes whatever is noted. ClaimManual takes it when it claims.
	ClearReexportRequest(ctx context.Context, key partition.Key, note ledger.ReexportNote) error
	// Days larger than one run (slices.go).
	SliceLedger
}

var _ LedgerAPI = serviceLedger{}

// QueueAPI fans a manual day range out into one message per day.
type QueueAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// ErrRejected marks a request that can never succeed (unknown account or
// dataset, a day that is not closed yet). Like a malformed message it is
// reported as a batch failure and ends in the DLQ, where an operator sees it.
var ErrRejected = errors.New("request rejected")

// Service turns queue messages into exports.
type Service struct {
	// Catalog is the deployment's dataset catalog (Config.Catalog).
	Catalog  *dataset.Set
	Ledger   LedgerAPI
	Queue    QueueAPI
	QueueURL string
	Exporter *Exporter
	Log      *slog.Logger
	Now      func() time.Time
	Rand     io.Reader
	Metrics  *metrics.Emitter
	// SettleDelay is the deployment's settle delay (SETTLE_DELAY), for an
	// account that sets none of its own; manual requests are checked with it.
	SettleDelay time.Duration
	// Reserve is kept back from the invocation's deadline so that a run cut
	// short still aborts its uploads (upload.AbortTimeout) and records the
	// failure (finishContext) before Lambda ends it. Default DefaultReserve.
	Reserve time.Duration
	// Lifecycle: restatement checks, reseeds and events (lifecycle.go).
	Lifecycle *Lifecycle
}

// Process handles one message body. A nil error means the message is done
// (exported, recorded as failed in the ledger, or a duplicate); an error
// means SQS should deliver it again (and, for malformed or rejected
// messages, eventually to the DLQ).
func (s *Service) Process(ctx context.Context, messageID, body string) error {
	log := s.Log.With("message_id", messageID)
	msg, err := jobs.Parse(s.Catalog, body)
	if err != nil {
		log.ErrorContext(ctx, "malformed message; it will reach the dead-letter queue", "error", err.Error(), "body", truncate(body, 512))
		return err
	}
	if msg.Slice != nil {
		return s.slice(ctx, *msg.Slice, log)
	}
	if handled, err := s.lifecycle(ctx, msg, log); handled {
		return err
	}
	if msg.Manual != nil {
		return s.manual(ctx, *msg.Manual, log)
	}
	return s.job(ctx, *msg.Job, log)
}

func (s *Service) job(ctx context.Context, j jobs.Job, log *slog.Logger) error {
	// jobs.Parse validated the job (jobs.Job.Validate), as strictly as a
	// manual request: a malformed one never gets here.
	log = log.With("account", j.AccountID, "dataset", j.Dataset, "day", j.Day, "generation", j.Generation)
	key := partition.Key{AccountID: j.AccountID, Dataset: j.Dataset, Day: j.DayValue()}
	claim, err := s.Ledger.Start(ctx, key, j.ClaimToken)
	if errors.Is(err, ledger.ErrClaimLost) || errors.Is(err, ledger.ErrNotFound) {
		return s.notStarted(ctx, key, j.ClaimToken, err, log)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", key, err)
	}
	return s.export(ctx, claim, nil, log)
}

// notStarted handles a job whose claim Start refused. A job for an account
// or a partition the ledger does not have, or with a claim token the
// partition never had (the ledger keeps the tokens it issued), can never
// run: it is rejected and reaches the dead-letter queue with the reason,
// and nothing is written. Otherwise it is a second delivery of a job (SQS
// is at-least-once) or a job whose claim was taken over, and is dropped;
// but when the row is at rest (not running), the run it started may have
// died after recording its outcome and before writing the day's delivery
// manifest, and no later message would rewrite it: so the manifest is
// rewritten from the ledger first (and the message delivered again if that
// fails). Whatever dies or fails when, the job's redelivery makes the
// manifest converge.
func (s *Service) notStarted(ctx context.Context, key partition.Key, token string, cause error, log *slog.Logger) error {
	acct, err := s.Ledger.GetAccount(ctx, key.AccountID)
	if errors.Is(err, ledger.ErrNotFound) {
		return s.reject(ctx, log, "job for account_id %q: no such account", key.AccountID)
	}
	if err != nil {
		return fmt.Errorf("get account %s: %w", key.AccountID, err)
	}
	row, err := s.Ledger.Get(ctx, key)
	if errors.Is(err, ledger.ErrNotFound) {
		return s.reject(ctx, log, "job for %s: the ledger has no row for this partition, so no claim on it ever existed", key)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if row.ClaimToken != token {
		is, err := s.Ledger.IssuedToken(ctx, key, token)
		switch {
		case errors.Is(err, ledger.ErrNotFound), err == nil && !is.Job:
			return s.reject(ctx, log, "job for %s: claim_token %q was never issued for a job of this partition", key, token)
		case err != nil:
			return fmt.Errorf("read the claim tokens of %s: %w", key, err)
		}
	}
	log.InfoContext(ctx, "job already started or its claim is gone; dropping this message", "reason", cause.Error(), "state", string(row.State))
	return s.recorder().deliverAtRest(ctx, acct, row, log)
}

// manual serves a manual request, top to bottom: it checks the request
// against its account with the one check the CLI applies too
// (jobs.CheckRequest: account, dataset, start date, a closed day, the range
// bound) and rejects it, to the dead-letter queue with the reason, when it
// fails; it fans a range out as one request per day, so each day is claimed
// and exported in its own invocation; and it claims a single day and
// exports it. A request with an id (the CLI's, the console's) is served
// once per day: its message sent twice finds the request served
// (ledger.ErrServed), rewrites the day's delivery manifest if the day is
// at rest, and is done.
func (s *Service) manual(ctx context.Context, m jobs.Manual, log *slog.Logger) error {
	m.Dataset = s.Catalog.Current(m.Dataset)
	log = log.With("account", m.AccountID, "dataset", m.Dataset)
	if m.RequestedBy != "" {
		log = log.With("requested_by", m.RequestedBy)
	}
	var acct *account.Account
	a, err := s.Ledger.GetAccount(ctx, m.AccountID)
	switch {
	case err == nil:
		acct = &a
	case !errors.Is(err, ledger.ErrNotFound):
		return fmt.Errorf("get account %s: %w", m.AccountID, err)
	}
	from, to, err := jobs.CheckRequest(s.Catalog, m, acct, jobs.Limits{Now: s.Now(), SettleDelay: s.SettleDelay})
	if err != nil {
		// The CLI and the console note a single-day request on its day when
		// they send it; the refused one's note is taken back, so the day does
		// not show as requested for ever. Best effort: the refusal stands, and
		// a note left behind goes with the day's next re-export or retry.
		if m.Day != "" && !from.IsZero() {
			key := partition.Key{AccountID: m.AccountID, Dataset: m.Dataset, Day: from}
			if cerr := s.Ledger.ClearReexportRequest(ctx, key, ledger.ReexportNote{}); cerr != nil {
				log.WarnContext(ctx, "the refused request's day still shows it requested", "day", m.Day, "error", cerr.Error())
			}
		}
		return s.reject(ctx, log, "%w", err)
	}
	if from != to {
		msgs, err := jobs.Encoded(m.PerDay(from, to)...)
		if err != nil {
			return err
		}
		// On error, SQS sends the range again. A range with a request id
		// passes it to its days, so a day served already is not run
		// again; one written by hand, without an id, fans out again in full.
		if err := s.queue().Send(ctx, msgs...); err != nil {
			return fmt.Errorf("fan out %s..%s: %w", from, to, err)
		}
		log.InfoContext(ctx, "manual range fanned out", "from", from.String(), "to", to.String(), "days", len(msgs))
		return nil
	}
	key := partition.Key{AccountID: m.AccountID, Dataset: m.Dataset, Day: from}
	log = log.With("day", from.String())
	claim, err := s.Ledger.ClaimManual(ctx, key, ledger.ManualRequest{By: m.RequestedBy, ID: m.RequestID})
	switch {
	case errors.Is(err, ledger.ErrBusy):
		log.InfoContext(ctx, "partition is running; the re-export is recorded and runs after it")
		return nil
	case errors.Is(err, ledger.ErrServed):
		// SQS sent the request's message again: it ran, or runs, once. The
		// run may have recorded its outcome and failed to write the day's
		// delivery manifest, which is why SQS sent it again: with the row
		// at rest, the manifest is rewritten from the ledger (as for a job
		// sent again, notStarted).
		log.InfoContext(ctx, "the re-export request was served already; nothing to do", "request_id", m.RequestID)
		var served *ledger.ServedError
		if !errors.As(err, &served) {
			return fmt.Errorf("claim %s: %w", key, err)
		}
		return s.recorder().deliverAtRest(ctx, *acct, served.Row, log)
	}
	if err != nil {
		return fmt.Errorf("claim %s: %w", key, err)
	}
	return s.export(ctx, claim, acct, log.With("generation", claim.Generation))
}

func (s *Service) reject(ctx context.Context, log *slog.Logger, format string, args ...any) error {
	err := fmt.Errorf("%w: "+format, append([]any{ErrRejected}, args...)...)
	log.ErrorContext(ctx, "request rejected; it will reach the dead-letter queue", "error", err.Error())
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// export runs one claimed partition and records the outcome in the ledger.
// An export failure is recorded (with backoff) and the message is done:
// retries are the ledger's job, SQS redelivery is only for crashes (E4).
//
// acct is the account as the request read it (a manual request's), or nil:
// the generation reads it.
func (s *Service) export(ctx context.Context, claim ledger.Claim, acct *account.Account, log *slog.Logger) error {
	rec := s.recorder()
	id, err := rec.runID()
	if err != nil {
		return err
	}
	g := rec.generation(claim, id, s.Now(), log)
	// The export gets the invocation's time less a reserve; the ledger writes
	// after it get a fresh context, so a timeout is recorded, not lost.
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	w, err := g.export(runCtx, acct)
	ctx, done := finishContext(ctx)
	defer done()
	if err != nil {
		// A run refused by a fence is not due again before it ends.
		return g.failedAfter(ctx, err, fenceOf(err))
	}
	if w.Planned != nil {
		return nil // the slices export the day, and the last commits it (slices.go)
	}
	return g.finish(ctx, w)
}

// queue is the jobs queue.
func (s *Service) queue() jobs.Queue { return jobs.Queue{API: s.Queue, URL: s.QueueURL} }

// recorder is the recorder of a run of s, built from s as it is now.
func (s *Service) recorder() *recorder {
	return &recorder{catalog: s.Catalog, ledger: s.Ledger, queue: s.queue(),
		exporter: s.Exporter, now: s.Now, rand: s.Rand, metrics: s.Metrics, lifecycle: s.Lifecycle, settleDelay: s.SettleDelay}
}

// runContext ends the export Reserve before the invocation's deadline.
func (s *Service) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-s.reserve()))
}

func (s *Service) reserve() time.Duration {
	if s.Reserve == 0 {
		return DefaultReserve
	}
	return s.Reserve
}

// DefaultReserve covers an abort (upload.AbortTimeout), the ledger writes
// (finishTimeout) and a margin.
const DefaultReserve = upload.AbortTimeout + finishTimeout + 5*time.Second

const finishTimeout = 15 * time.Second

// finishContext outlives a cancelled export for the ledger writes that
// record its outcome, bounded so it cannot hang an invocation.
func finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
}
