package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/partition"
)

// manifestView is what the bucket says about the partition.
type manifestView struct {
	URI string // of _manifest.json
	// Problem says the bucket could not be read, and why; nothing else is
	// known then.
	Problem string
	// Committed: _SUCCESS is there, naming Generation.
	Committed   bool
	Generation  int64
	CommittedAt string
	// Note says what is missing or odd, in words.
	Note     string
	Manifest *manifest.Manifest
}

// deliveryView is the day's delivery manifest's entry for the dataset.
type deliveryView struct {
	URI       string
	Problem   string
	Found     bool
	Complete  bool
	UpdatedAt string
	Delivered *manifest.DeliveredDataset
	Missing   *manifest.MissingDataset
	Others    int
}

type partitionPage struct {
	Account      account.Account
	Dataset      string
	Day          string
	Exported     bool // the account exports the dataset now
	History      ops.PartitionHistory
	Describe     string
	LastFailure  *ops.Attempt
	Manifest     manifestView
	Delivery     deliveryView
	AccountHref  string
	ReexportHref string
	RetryHref    string
	Stuck        bool
	// Prev and Next are the dataset's day before and after, within the
	// account's start date and its last closed day; Others the account's
	// other datasets of the same day.
	Prev, Next *link
	Others     []link
}

// partition is one partition's page: its row, its attempts, the manifest
// and delivery manifest in the account's bucket.
func (s *Server) partition(w http.ResponseWriter, r *http.Request) {
	acct, ok := s.getAccount(w, r, r.PathValue("account"))
	if !ok {
		return
	}
	dsName, dayText := r.PathValue("dataset"), r.PathValue("day")
	if _, err := s.cfg.Catalog.Get(dsName); err != nil {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("No dataset “%s”: daybook exports %s.", dsName, strings.Join(s.cfg.Catalog.Names(), ", ")))
		return
	}
	day, err := civil.Parse(dayText)
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, fmt.Sprintf("“%s” is not a day: want YYYY-MM-DD.", dayText))
		return
	}
	if closed := s.closedThrough(acct); day.After(closed) {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%s is not closed yet for account %s (time zone %s): its last closed day is %s, and a day is exported only once it has closed.",
			day, acct.ID, acct.WithDefaults(s.cfg.SettleDelay).TimeZone, closed))
		return
	}
	key := partition.Key{AccountID: acct.ID, Dataset: s.cfg.Catalog.Current(dsName), Day: day} // at a later contract, its rows
	hist, err := ops.History(r.Context(), s.cfg.Ledger, key, s.now())
	if err != nil {
		s.failed(w, r, err)
		return
	}
	p := partitionPage{Account: acct, Dataset: dsName, Day: day.String(), Exported: slices.Contains(acct.Datasets, dsName),
		History: hist, LastFailure: hist.LastFailure(), AccountHref: "/accounts/" + url.PathEscape(acct.ID)}
	if hist.Current != nil {
		// The state in words: a failure by its cause, whose raw text is
		// folded under "Last failure" below.
		cur := *hist.Current
		if cur.Error != "" {
			code, what, _ := ops.CauseOfError(cur.Error)
			cur.Error = string(code)
			if what != "" {
				cur.Error += ": " + what
			}
			cur.Error += " (below: the fix and the raw error)"
		}
		p.Describe = ops.Describe(cur)
		p.Stuck = hist.Current.State == ops.Failed || hist.Current.State == ops.Stopped
	} else {
		p.Describe = "no ledger row: the day was never materialized, retried or re-exported"
	}
	if prev := day.AddDays(-1); !prev.Before(acct.StartDate) {
		p.Prev = &link{prev.String(), partitionHref(acct.ID, dsName, prev.String())}
	}
	if next := day.AddDays(1); !next.After(s.closedThrough(acct)) {
		p.Next = &link{next.String(), partitionHref(acct.ID, dsName, next.String())}
	}
	for _, ds := range acct.Datasets {
		if ds != dsName {
			p.Others = append(p.Others, link{ds, partitionHref(acct.ID, ds, day.String())})
		}
	}
	q := url.Values{"account": {acct.ID}, "dataset": {dsName}, "day": {day.String()}}
	if s.cfg.Queue != nil && s.cfg.QueueURL != "" {
		p.ReexportHref = "/actions/reexport?" + q.Encode()
	}
	if p.Stuck {
		p.RetryHref = "/actions/retry?" + q.Encode()
	}
	p.Manifest, p.Delivery = s.readBucket(r.Context(), acct, key.Dataset, day)
	s.render(w, r, http.StatusOK, "partition", dsName+" "+day.String()+" · "+acct.ID,
		[]crumb{{Text: "Fleet", Href: "/"}, {Text: acct.Name + " (" + acct.ID + ")", Href: p.AccountHref}, {Text: dsName + " " + day.String()}}, p)
}

// readBucket reads _SUCCESS, _manifest.json and the day's delivery manifest
// from the account's bucket; what cannot be read is said, not failed. ds is
// the partition's ledger name.
func (s *Server) readBucket(ctx context.Context, acct account.Account, ds string, day civil.Date) (manifestView, deliveryView) {
	name, _ := dataset.SplitLedgerName(ds)
	var m manifestView
	var d deliveryView
	prefix, err := acct.Prefix(s.cfg.Stage)
	if err != nil {
		m.Problem = "the account's prefix does not render: " + err.Error()
		d.Problem = m.Problem
		return m, d
	}
	uri := acct.Destination.URI
	m.URI = uri(layout.ManifestKey(prefix, ds, day))
	d.URI = uri(layout.DeliveryManifestKey(prefix, day))
	b, err := s.cfg.Buckets.Reader(acct)
	if err != nil {
		m.Problem = readProblem(strings.TrimSuffix(uri(""), "/"), err) // the bucket as its store names it
		d.Problem = m.Problem
		return m, d
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.BucketTimeout)
	defer cancel()
	get := func(key string, limit int64) ([]byte, bool, string) {
		body, err := b.Get(ctx, key, limit)
		switch {
		case err == nil:
			return body, true, ""
		case errors.Is(err, bucket.ErrNotFound):
			return nil, false, ""
		}
		return nil, false, readProblem(uri(key), err)
	}

	var succ manifest.Success
	if body, ok, problem := get(layout.SuccessKey(prefix, ds, day), manifest.MaxSuccessBytes); problem != "" {
		m.Problem = problem
	} else if ok {
		var err error
		if succ, err = manifest.DecodeSuccess(body); err != nil {
			m.Note = "_SUCCESS is unreadable: " + err.Error()
		} else {
			m.Committed, m.Generation, m.CommittedAt = true, succ.Generation, ops.FormatTime(succ.CommittedAt)
		}
	}
	if m.Problem == "" {
		body, ok, problem := get(layout.ManifestKey(prefix, ds, day), manifest.MaxManifestBytes)
		switch {
		case problem != "":
			m.Problem = problem
		case !ok && m.Committed:
			m.Note = "_SUCCESS is there but _manifest.json is not"
		case !ok:
			m.Note = "no _SUCCESS and no _manifest.json: the partition is not delivered"
		default:
			mf, err := manifest.Decode(body)
			switch {
			case err != nil:
				m.Note = "_manifest.json is unreadable: " + err.Error()
			case m.Committed && !succ.Matches(body):
				m.Note = "_manifest.json is not the one _SUCCESS commits (its SHA-256 differs): edited or replaced after the commit; do not read the partition"
			default:
				// The bucket is the customer's: a manifest that names
				// another partition or lists files outside this one is
				// said, not shown as this partition's.
				want := manifest.Expect{AccountID: acct.ID, Dataset: name, Contract: dataset.ContractOf(ds), Day: day.String(),
					Generation: mf.Generation, Partition: layout.PartitionPrefix(prefix, ds, day)}
				if m.Committed {
					want.Generation = succ.Generation
				}
				if err := mf.Check(want); err != nil {
					m.Note = err.Error() + "; do not read the partition"
					break
				}
				m.Manifest = mf
				if !m.Committed {
					m.Note = "no _SUCCESS: this manifest is from an earlier generation, or the partition is being written again; do not read it"
				}
			}
		}
	}

	body, ok, problem := get(layout.DeliveryManifestKey(prefix, day), manifest.MaxDeliveryBytes)
	d.Problem, d.Found = problem, ok
	if ok {
		dm, err := manifest.DecodeDelivery(body)
		if err != nil {
			d.Problem = "the delivery manifest is unreadable: " + err.Error()
			d.Found = false
			return m, d
		}
		d.Complete, d.UpdatedAt = dm.Complete, ops.FormatTime(dm.UpdatedAt)
		for i := range dm.DatasetsDelivered {
			if dm.DatasetsDelivered[i].Name == ds {
				d.Delivered = &dm.DatasetsDelivered[i]
			}
		}
		for i := range dm.DatasetsMissing {
			if dm.DatasetsMissing[i].Name == ds {
				d.Missing = &dm.DatasetsMissing[i]
			}
		}
		d.Others = len(dm.DatasetsDelivered) + len(dm.DatasetsMissing)
		if d.Delivered != nil || d.Missing != nil {
			d.Others--
		}
	}
	return m, d
}

// readProblem says in words why the console could not read what (an s3://
// URI), then the raw error after readProblemRaw, which the page folds away.
func readProblem(what string, err error) string {
	words := "could not read " + what
	switch {
	case errors.Is(err, bucket.ErrNoSuchBucket):
		words = "the bucket does not exist (check the account's destination.bucket and region)"
	case errors.Is(err, bucket.ErrAccessDenied):
		words = "access to " + what + " was denied: the customer's role (or, with daybook's own role, its policy) does not let the console read it"
	case errors.Is(err, bucket.ErrTooLarge):
		words = what + " is larger than daybook ever writes it, so it was not read"
	case errors.Is(err, context.DeadlineExceeded):
		words = "the bucket did not answer in time"
	}
	return words + readProblemRaw + err.Error()
}

// readProblemRaw separates a read problem's words from its raw error.
const readProblemRaw = "\x00raw\x00"
