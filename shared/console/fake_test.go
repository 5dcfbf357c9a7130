package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// testNow is the console's clock in these tests: 2026-11-30 is open, the
// 29th is closed (UTC, the default 2 h settle delay has passed).
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakeLedger is an in-memory ledger with the semantics the console relies
// on: rows by key, attempt history, accounts; Requeue as the ledger does it.
type fakeLedger struct {
	mu       sync.Mutex
	accounts map[string]account.Account
	rows     map[partition.Key]ledger.Row
	history  map[partition.Key][]ledger.Attempt
	plans    map[partition.Key]ledger.SlicePlan // days running in slices
	slices   map[partition.Key][]ledger.Slice
	failList error // List and the fleet index fail with it
	// fleetReads counts the fleet index reads.
	fleetReads int
	// stored are the accounts whose summary FleetSummary was asked for:
	// the ledger's stores one it has to build (FleetSummaryReadOnly never
	// stores).
	stored map[string]bool
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{accounts: map[string]account.Account{}, rows: map[partition.Key]ledger.Row{}, history: map[partition.Key][]ledger.Attempt{},
		plans: map[partition.Key]ledger.SlicePlan{}, slices: map[partition.Key][]ledger.Slice{}, stored: map[string]bool{}}
}

func (f *fakeLedger) ListAccounts(context.Context) ([]account.Account, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []account.Account
	for _, a := range f.accounts {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (f *fakeLedger) GetAccount(_ context.Context, id string) (account.Account, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.accounts[id]
	if !ok {
		return a, fmt.Errorf("%w: account %s", ledger.ErrNotFound, id)
	}
	return a, nil
}

func (f *fakeLedger) UpdateAccount(_ context.Context, a account.Account, _ string) (account.Account, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accounts[a.ID] = a
	return a, nil
}

func (f *fakeLedger) List(_ context.Context, acct, ds string, from, to civil.Date) ([]ledger.Row, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failList != nil {
		return nil, f.failList
	}
	var out []ledger.Row
	for k, r := range f.rows {
		if k.AccountID == acct && k.Dataset == ds && !k.Day.Before(from) && !k.Day.After(to) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Day.Before(out[j].Day) })
	return out, nil
}

func (f *fakeLedger) Get(_ context.Context, k partition.Key) (ledger.Row, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rows[k]
	if !ok {
		return r, fmt.Errorf("%w: %s", ledger.ErrNotFound, k)
	}
	return r, nil
}

func (f *fakeLedger) History(_ context.Context, k partition.Key) ([]ledger.Attempt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ledger.Attempt(nil), f.history[k]...), nil
}

func (f *fakeLedger) Requeue(_ context.Context, rr ledger.RequeueRange) (ledger.RequeueResult, error) {
	acct, ds, from, to, reason := rr.AccountID, rr.Dataset, rr.From, rr.To, rr.Reason
	f.mu.Lock()
	defer f.mu.Unlock()
	var res ledger.RequeueResult
	for _, d := range civil.Range(from, to) {
		k := partition.Key{AccountID: acct, Dataset: ds, Day: d}
		r, ok := f.rows[k]
		if r.State == ledger.StateRunning && !r.LeaseUntil.Before(testNow) {
			r.RerunRequested = true
			f.rows[k] = r
			res.RerunRequested++
			continue
		}
		if !ok {
			res.Created++
			r = ledger.Row{Key: k}
		}
		r.State, r.Reason, r.Attempts, r.Stopped, r.DueKey, r.UpdatedAt = ledger.StateQueued, reason, 0, false, "0#"+d.String(), testNow
		f.rows[k] = r
		res.Queued++
	}
	return res, nil
}

// NoteReexportRequested notes the requests on existing rows not under a
// live claim, as the ledger does (ledger.NoteReexportRequested).
func (f *fakeLedger) NoteReexportRequested(_ context.Context, acct, ds string, days []civil.Date, by string) (ledger.ReexportNote, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	note := ledger.ReexportNote{At: testNow, By: by}
	for _, d := range days {
		k := partition.Key{AccountID: acct, Dataset: ds, Day: d}
		r, ok := f.rows[k]
		if !ok || r.State == ledger.StateRunning && !r.LeaseUntil.Before(testNow) {
			continue
		}
		r.ReexportRequestedAt, r.ReexportRequestedBy = note.At, note.By
		f.rows[k] = r
		note.Noted = append(note.Noted, d)
	}
	return note, nil
}

func (f *fakeLedger) ClearReexportRequest(_ context.Context, k partition.Key, note ledger.ReexportNote) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.rows[k]; ok && (note.At.IsZero() || r.ReexportRequestedAt.Equal(note.At) && r.ReexportRequestedBy == note.By) {
		r.ReexportRequestedAt, r.ReexportRequestedBy = time.Time{}, ""
		f.rows[k] = r
	}
	return nil
}

// The fake's fleet index: every account summarized from its rows and
// history as ledger.Refresh does (ledger.Summarize), worst first, paged
// by offset. fleetReads counts the index reads.
func (f *fakeLedger) summaries() ([]ledger.Summary, error) {
	accts, _ := f.ListAccounts(context.Background())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fleetReads++
	if f.failList != nil {
		return nil, f.failList
	}
	var out []ledger.Summary
	for _, a := range accts {
		var rows []ledger.Row
		var hist []ledger.Attempt
		for k, r := range f.rows {
			if k.AccountID == a.ID && slices.Contains(a.Datasets, k.Dataset) {
				rows = append(rows, r)
				if ledger.MayHaveFailedSince(r, testNow.Add(-ledger.FailureWindow)) {
					hist = append(hist, f.history[k]...)
				}
			}
		}
		out = append(out, ledger.Summarize(a, rows, hist, testNow))
	}
	slices.SortFunc(out, func(x, y ledger.Summary) int {
		if c := y.Severity() - x.Severity(); c != 0 {
			return c
		}
		if c := strings.Compare(cmp.Or(x.OldestDue, "~"), cmp.Or(y.OldestDue, "~")); c != 0 {
			return c
		}
		return strings.Compare(x.Account, y.Account)
	})
	return out, nil
}

func pageOf(all []ledger.Summary, token string, limit int) (ledger.FleetPage, error) {
	from := 0
	if token != "" {
		if _, err := fmt.Sscan(token, &from); err != nil || from < 0 || from > len(all) {
			return ledger.FleetPage{}, fmt.Errorf("%w: %q", ledger.ErrBadPageToken, token)
		}
	}
	to := min(from+limit, len(all))
	p := ledger.FleetPage{Summaries: all[from:to]}
	if to < len(all) {
		p.Next = fmt.Sprint(to)
	}
	return p, nil
}

func (f *fakeLedger) FleetPage(_ context.Context, token string, limit int) (ledger.FleetPage, error) {
	all, err := f.summaries()
	if err != nil {
		return ledger.FleetPage{}, err
	}
	return pageOf(all, token, limit)
}

func (f *fakeLedger) SearchFleet(_ context.Context, prefix, token string, limit int) (ledger.FleetPage, error) {
	all, err := f.summaries()
	if err != nil {
		return ledger.FleetPage{}, err
	}
	all = slices.DeleteFunc(all, func(s ledger.Summary) bool {
		return !strings.HasPrefix(strings.ToLower(s.Name), strings.ToLower(prefix))
	})
	slices.SortFunc(all, func(x, y ledger.Summary) int {
		return strings.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name))
	})
	return pageOf(all, token, limit)
}

func (f *fakeLedger) FleetSummary(ctx context.Context, id string) (ledger.Summary, error) {
	f.mu.Lock()
	f.stored[id] = true
	f.mu.Unlock()
	return f.FleetSummaryReadOnly(ctx, id)
}

func (f *fakeLedger) FleetSummaryReadOnly(_ context.Context, id string) (ledger.Summary, error) {
	all, err := f.summaries()
	if err != nil {
		return ledger.Summary{}, err
	}
	for _, s := range all {
		if s.Account == id {
			return s, nil
		}
	}
	return ledger.Summary{}, fmt.Errorf("%w: account %s", ledger.ErrNotFound, id)
}

// snapshot is the whole fake as text, to show that nothing changed.
func (f *fakeLedger) snapshot(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := map[string]ledger.Row{}
	for k, r := range f.rows {
		rows[k.String()] = r
	}
	b, err := json.Marshal(struct {
		A map[string]account.Account
		R map[string]ledger.Row
		S map[string]bool
	}{f.accounts, rows, f.stored})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f *fakeLedger) put(r ledger.Row, attempts ...ledger.Attempt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows[r.Key] = r
	f.history[r.Key] = append(f.history[r.Key], attempts...)
}

// fakeQueue records what SendMessageBatch sends.
type fakeQueue struct {
	mu     sync.Mutex
	bodies []string
	fail   error
}

func (q *fakeQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return nil, q.fail
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		q.bodies = append(q.bodies, aws.ToString(e.MessageBody))
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(fmt.Sprintf("m-%d", len(q.bodies)))})
	}
	return out, nil
}

func (q *fakeQueue) sent() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.bodies...)
}

// fakeBucket is objects by key, or an error for every read.
type fakeBucket struct {
	objects map[string][]byte
	err     error
}

func (b fakeBucket) Get(_ context.Context, key string, limit int64) ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	body, ok := b.objects[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("get %s: %w: %d bytes, more than %d", key, bucket.ErrTooLarge, len(body), limit)
	}
	return body, nil
}

// fixture is a console over the fakes.
type fixture struct {
	t      *testing.T
	ledger *fakeLedger
	queue  *fakeQueue
	bucket fakeBucket
	log    bytes.Buffer
	srv    *Server
}

type configure func(*Config)

func readOnly(c *Config) { c.ReadOnly = true }

func newFixture(t *testing.T, opts ...configure) *fixture {
	t.Helper()
	f := &fixture{t: t, ledger: newFakeLedger(), queue: &fakeQueue{}, bucket: fakeBucket{objects: map[string][]byte{}}}
	cfg := Config{
		Catalog: datasettest.Example(t),
		Ledger:  f.ledger, Queue: f.queue, QueueURL: "https://sqs.test/jobs", Stage: "test", Deployment: "the test ledger", SettleDelay: 2 * time.Hour,
		Buckets:  BucketsFunc(func(account.Account) (ObjectReader, error) { return f.bucket, nil }),
		Identity: FixedIdentity("arn:aws:iam::123456789012:user/alice"),
		Hosts:    []string{"console.test"},
		Now:      func() time.Time { return testNow },
		Rand:     rand.NewChaCha8([32]byte{1}),
		Log:      slog.New(slog.NewTextHandler(&f.log, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	return f
}

// response is an answered request.
type response struct {
	code   int
	body   string
	header http.Header
}

func (f *fixture) do(r *http.Request) response {
	f.t.Helper()
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	return response{code: w.Code, body: w.Body.String(), header: w.Header()}
}

func (f *fixture) get(path string) response {
	f.t.Helper()
	return f.do(httptest.NewRequest(http.MethodGet, "http://console.test"+path, nil))
}

// session is a browser's token cookie, got from a page load.
func (f *fixture) session() string {
	f.t.Helper()
	res := f.get("/")
	for _, c := range (&http.Response{Header: res.header}).Cookies() {
		if c.Name == csrfCookie {
			return c.Value
		}
	}
	f.t.Fatalf("no %s cookie set by a page load: %v", csrfCookie, res.header)
	return ""
}

// post sends a form the way a browser on the console's own page does,
// unless edit changes the request first.
func (f *fixture) post(path string, form url.Values, token string, edit ...func(*http.Request)) response {
	f.t.Helper()
	form = cloneValues(form)
	if token != "" {
		form.Set(csrfField, token)
	}
	r := httptest.NewRequest(http.MethodPost, "http://console.test"+path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://console.test")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	if token != "" {
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: token})
	}
	for _, e := range edit {
		e(r)
	}
	return f.do(r)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

var _ io.Reader = (*rand.ChaCha8)(nil)

func readCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

func (f *fakeLedger) SlicesOf(_ context.Context, k partition.Key) (ledger.SlicePlan, []ledger.Slice, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.plans[k]
	if !ok {
		return ledger.SlicePlan{}, nil, ledger.ErrNotFound
	}
	return p, f.slices[k], nil
}
