package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Progress hears how far a long action got; nil hears nothing.
type Progress interface{ Add(n int) }

func add(p Progress, n int) {
	if p != nil {
		p.Add(n)
	}
}

// Requeuer makes days due (the ledger's stored name for that is queued);
// Ledger has it.
type Requeuer interface {
	Requeue(ctx context.Context, r ledger.RequeueRange) (ledger.RequeueResult, error)
}

var _ Requeuer = Ledger{}

// retryChunk is the most days one Requeue call names, so progress moves.
const retryChunk = 7

// Retry makes days due again, for the next sweep to claim: daybook retry
// and the console's Retry (ledger.Partitions.Requeue: missing rows created, stopped
// rows given fresh attempts, running rows marked to run again), one call
// per run of consecutive days of at most a week, recorded as requested by
// by. days must be sorted. On an
// error the result counts what was done before it.
func Retry(ctx context.Context, catalog *dataset.Set, l Requeuer, accountID, ds string, days []civil.Date, reason partition.Reason, by string, p Progress) (ledger.RequeueResult, error) {
	var res ledger.RequeueResult
	for start := 0; start < len(days); {
		end := start + 1
		for end < len(days) && end-start < retryChunk && days[end] == days[end-1].AddDays(1) {
			end++
		}
		r, err := l.Requeue(ctx, ledger.RequeueRange{AccountID: accountID, Dataset: catalog.Current(ds), From: days[start], To: days[end-1], Reason: reason, RequestedBy: by}) // by is recorded on the rows and their attempts
		res.Queued += r.Queued
		res.Created += r.Created
		res.RerunRequested += r.RerunRequested
		add(p, end-start)
		if err != nil {
			return res, fmt.Errorf("retry stopped after %d of %d days: %w", res.Queued+res.RerunRequested, len(days), err)
		}
		start = end
	}
	return res, nil
}

// SendAPI is the part of SQS a re-export uses; *sqs.Client has it.
type SendAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SendAPI = (*sqs.Client)(nil)

// SentRequest is one manual re-export request on the jobs queue.
type SentRequest struct {
	Day       string `json:"day"`
	MessageID string `json:"message_id"`
	Body      string `json:"body"`
}

// ReexportNoter notes on the partition rows that re-export requests are on
// their way, so the days show as requested until the exporter claims them
// (ledger.NoteReexportRequested), and takes a note back for a request that
// was not sent; Ledger has it.
type ReexportNoter interface {
	NoteReexportRequested(ctx context.Context, accountID, dataset string, days []civil.Date, by string) (ledger.ReexportNote, error)
	ClearReexportRequest(ctx context.Context, key partition.Key, note ledger.ReexportNote) error
}

var _ ReexportNoter = Ledger{}

// SendReexports sends one manual re-export request per day to the jobs
// queue, ten per batch, recording requestedBy. Before it sends, it notes
// the requests on the days' rows (ReexportNoter: a row under a live claim
// is left alone), so that status and the console show them requested from
// then on; the note of a day whose request was not sent is taken back.
// Every message carries the note's request id, so that a message SQS
// sends twice is served once. It
// returns what was sent, sorted by day, also when it fails part way.
func SendReexports(ctx context.Context, catalog *dataset.Set, l ReexportNoter, api SendAPI, queueURL, accountID, ds string, days []civil.Date, requestedBy string, p Progress) ([]SentRequest, error) {
	key := func(d civil.Date) partition.Key {
		return partition.Key{AccountID: accountID, Dataset: catalog.Current(ds), Day: d}
	}
	note, err := l.NoteReexportRequested(ctx, accountID, catalog.Current(ds), days, requestedBy)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("note the re-export requests (none sent): %w", err), unnote(ctx, l, note, note.Noted, key))
	}
	sent, err := sendReexports(ctx, api, queueURL, jobs.Manual{Kind: jobs.KindManual, AccountID: accountID, Dataset: ds, RequestedBy: requestedBy, RequestID: note.ID}, days, p)
	if err != nil {
		unsent := slices.DeleteFunc(slices.Clone(note.Noted), func(d civil.Date) bool {
			return slices.ContainsFunc(sent, func(r SentRequest) bool { return r.Day == d.String() })
		})
		err = errors.Join(err, unnote(ctx, l, note, unsent, key))
	}
	return sent, err
}

// unnote takes back the note of the days whose requests were not sent.
func unnote(ctx context.Context, l ReexportNoter, note ledger.ReexportNote, days []civil.Date, key func(civil.Date) partition.Key) error {
	var errs []error
	for _, d := range days {
		if err := l.ClearReexportRequest(context.WithoutCancel(ctx), key(d), note); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d days show a re-export requested that was not sent until they are re-exported or retried: %w", len(errs), errors.Join(errs...))
	}
	return nil
}

// sendReexports sends the request m for each of days, ten to a batch.
func sendReexports(ctx context.Context, api SendAPI, queueURL string, m jobs.Manual, days []civil.Date, p Progress) ([]SentRequest, error) {
	var sent []SentRequest
	q := jobs.Queue{API: api, URL: queueURL}
	for chunk := range slices.Chunk(days, jobs.BatchSize) {
		msgs := make([]jobs.Outgoing, len(chunk))
		for i, d := range chunk {
			m.Day = d.String()
			body, err := jobs.Encode(m)
			if err != nil {
				return sortSent(sent), err
			}
			msgs[i] = jobs.Outgoing{Body: body}
		}
		results, err := q.SendBatch(ctx, msgs)
		if err != nil {
			return sortSent(sent), fmt.Errorf("send re-export requests (%d of %d sent): %w", len(sent), len(days), err)
		}
		var unsent []int
		for i, r := range results {
			if r.Err != nil {
				unsent = append(unsent, i)
				continue
			}
			sent = append(sent, SentRequest{Day: chunk[i].String(), MessageID: r.MessageID, Body: msgs[i].Body})
		}
		add(p, len(chunk))
		if len(unsent) > 0 {
			first := unsent[0]
			why := results[first].Err.Error()
			if e := (*jobs.EntryError)(nil); errors.As(results[first].Err, &e) {
				why = e.Message
			}
			return sortSent(sent), fmt.Errorf("%d requests were not sent (first: day %s: %s); %d of %d sent",
				len(unsent), chunk[first], why, len(sent), len(days))
		}
	}
	return sortSent(sent), nil
}

func sortSent(s []SentRequest) []SentRequest {
	slices.SortFunc(s, func(x, y SentRequest) int { return strings.Compare(x.Day, y.Day) })
	return s
}

// AccountStore reads accounts and updates them conditionally;
// Ledger has it.
type AccountStore interface {
	AccountGetter
	// UpdateAccount writes a only if the stored account is still at
	// a.Version (ledger.ErrChanged otherwise), recording by in its history.
	UpdateAccount(ctx context.Context, a account.Account, by string) (account.Account, error)
}

var _ AccountStore = Ledger{}

// ErrNoAccount: no account has the id.
var ErrNoAccount = errors.New("no such account")

// SetEnabled enables or disables an account, recording by (who asks) in its
// history: the sweeper skips a disabled account and the exporter refuses
// its jobs. changed is false when it already was; nothing is written then.
// The write is conditional on the version read, so a change made meanwhile
// (a new destination, say) is never reverted: the account is read again
// and only enabled is set on what is stored now.
func SetEnabled(ctx context.Context, s AccountStore, id string, enabled bool, by string) (acct account.Account, changed bool, err error) {
	for attempt := 1; ; attempt++ {
		acct, err = s.GetAccount(ctx, id)
		if errors.Is(err, ledger.ErrNotFound) {
			return acct, false, fmt.Errorf("%w: %s", ErrNoAccount, id)
		}
		if err != nil || acct.Enabled == enabled {
			return acct, false, err
		}
		acct.Enabled = enabled
		stored, err := s.UpdateAccount(ctx, acct, by)
		if errors.Is(err, ledger.ErrChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			return acct, false, err
		}
		return stored, true, nil
	}
}
