package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ops"
)

// maxWindowDays bounds the days one account page shows.
const maxWindowDays = 800

// mostAttention is how many partitions the attention list shows.
const mostAttention = 60

// quickRanges are the window links above the heatmap, after the default
// (since the start date).
var quickRanges = []int{30, 90, 400}

type option struct {
	Name    string
	Checked bool
}

type rangeLink struct {
	Text, Href string
	Current    bool
}

// attentionRow is a partition an operator may need to look at.
type attentionRow struct {
	Dataset, Day, Href, Text string
	Phase                    ops.Phase
}

// failureGroup is a reason code's failed and stopped partitions, as the
// account page lists them: the first ones linked, the rest counted.
type failureGroup struct {
	ops.FailureGroup
	Links []attentionRow
	More  int
}

// mostGroupLinks is how many partitions a failure group links.
const mostGroupLinks = 12

// retryLink offers to retry the failed and stopped partitions of a
// dataset in the window.
type retryLink struct {
	Dataset string
	Count   int
	Href    string
}

type accountPage struct {
	Account     account.Account
	View        ops.AccountDays
	Heatmap     heatmap
	Destination string
	TimeZone    string
	Datasets    []option
	From, To    string
	Ranges      []rangeLink
	Outside     []string
	// Failures are the failed and stopped partitions grouped by reason
	// code; Attention the claimed, running and requested ones to look at.
	Failures  []failureGroup
	Attention []attentionRow
	// AttentionMore counts the ones left out of a long list.
	AttentionMore int
	Retry         []retryLink
	// RetryAll retries the failed and stopped partitions of every
	// dataset, when more than one has some.
	RetryAll    *retryLink
	CanReexport bool
	ToggleHref  string
	Query       string
}

// windowOf reads ?from=, ?to= and ?days= for acct; the error is said to the
// user as it is.
func (s *Server) windowOf(q url.Values, acct account.Account) (civil.Date, civil.Date, int, error) {
	var from, to civil.Date
	var err error
	for _, f := range []struct {
		name string
		dst  *civil.Date
	}{{"from", &from}, {"to", &to}} {
		if v := q.Get(f.name); v != "" {
			if *f.dst, err = civil.Parse(v); err != nil {
				return from, to, 0, fmt.Errorf("%s “%s” is not a date: want YYYY-MM-DD", f.name, v)
			}
		}
	}
	days := 0
	if v := q.Get("days"); v != "" {
		if days, err = strconv.Atoi(v); err != nil || days < 1 || days > maxWindowDays {
			return from, to, 0, fmt.Errorf("days “%s”: want a number of days from 1 to %d", v, maxWindowDays)
		}
		if !from.IsZero() || !to.IsZero() {
			return from, to, 0, fmt.Errorf("give days, or from and to, not both")
		}
	}
	if days == 0 && from.IsZero() && to.IsZero() {
		// The default: from the account's start date through its last
		// closed day, the last maxWindowDays of them for an older account;
		// an account that starts today or later shows its start date.
		to = acct.WithDefaults(s.cfg.SettleDelay).ClosedThrough(s.now())
		if to.Before(acct.StartDate) {
			to = acct.StartDate
		}
		from = acct.StartDate
		if from.DaysUntil(to)+1 > maxWindowDays {
			from = to.AddDays(-maxWindowDays + 1)
		}
		return from, to, 0, nil
	}
	from, to = ops.Window(acct, s.cfg.SettleDelay, s.now(), from, to, days)
	switch n := from.DaysUntil(to) + 1; {
	case n < 1:
		return from, to, days, fmt.Errorf("to %s is before from %s", to, from)
	case n > maxWindowDays:
		return from, to, days, fmt.Errorf("%s to %s is %d days; the page shows at most %d", from, to, n, maxWindowDays)
	}
	return from, to, days, nil
}

// account is an account's page: its datasets by day as a heatmap, the
// partitions that need attention, and its actions.
func (s *Server) account(w http.ResponseWriter, r *http.Request) {
	acct, ok := s.getAccount(w, r, r.PathValue("account"))
	if !ok {
		return
	}
	q := r.URL.Query()
	for _, ds := range q["dataset"] {
		if !slices.Contains(acct.Datasets, ds) {
			s.problem(w, r, http.StatusBadRequest, fmt.Sprintf("Account %s does not export “%s”; its datasets: %s.", acct.ID, ds, strings.Join(acct.Datasets, ", ")))
			return
		}
	}
	from, to, days, err := s.windowOf(q, acct)
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, "The window: "+err.Error()+".")
		return
	}
	v, err := ops.AccountView(r.Context(), s.cfg.Catalog, s.cfg.Ledger, acct, s.cfg.SettleDelay, s.now(), q["dataset"], nil, from, to)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	p := accountPage{Account: acct, View: v, Heatmap: buildHeatmap(v, from, to), From: from.String(), To: to.String(),
		TimeZone: acct.WithDefaults(s.cfg.SettleDelay).TimeZone, CanReexport: s.cfg.Queue != nil && s.cfg.QueueURL != ""}
	if prefix, err := acct.Prefix(s.cfg.Stage); err == nil {
		p.Destination = acct.Destination.URI(prefix + "/")
	}
	for _, ds := range acct.Datasets {
		p.Datasets = append(p.Datasets, option{Name: ds, Checked: slices.Contains(q["dataset"], ds)})
	}
	keep := url.Values{"dataset": q["dataset"]}
	p.Query = keep.Encode()
	since := "/accounts/" + url.PathEscape(acct.ID)
	if p.Query != "" {
		since += "?" + p.Query
	}
	p.Ranges = append(p.Ranges, rangeLink{Text: "since the start date", Href: since,
		Current: days == 0 && q.Get("from") == "" && q.Get("to") == ""})
	for _, n := range quickRanges {
		v := url.Values{"dataset": q["dataset"], "days": {strconv.Itoa(n)}}
		p.Ranges = append(p.Ranges, rangeLink{Text: fmt.Sprintf("last %d days", n), Href: "/accounts/" + url.PathEscape(acct.ID) + "?" + v.Encode(),
			Current: days == n})
	}
	for _, ds := range v.Datasets {
		if len(ds.Before) > 0 {
			p.Outside = append(p.Outside, fmt.Sprintf("%s before %s: %s", ds.Dataset, from, ops.CountsText(ds.Before)))
		}
		if len(ds.After) > 0 {
			p.Outside = append(p.Outside, fmt.Sprintf("%s after %s: %s", ds.Dataset, to, ops.CountsText(ds.After)))
		}
		stuck := 0
		for _, d := range ds.Days {
			switch d.State {
			case ops.Claimed, ops.Running, ops.Requested:
				p.Attention = append(p.Attention, attentionRow{Dataset: ds.Dataset, Day: d.Day, Phase: d.State,
					Href: partitionHref(acct.ID, ds.Dataset, d.Day), Text: ops.Describe(d)})
			}
			if d.State == ops.Failed || d.State == ops.Stopped {
				stuck++
			}
		}
		if stuck > 0 {
			// The request's own bounds: from the start date through the last
			// closed day.
			f, t := from, to
			if f.Before(acct.StartDate) {
				f = acct.StartDate
			}
			if closed := s.closedThrough(acct); t.After(closed) {
				t = closed
			}
			v := url.Values{"account": {acct.ID}, "dataset": {ds.Dataset}, "from": {f.String()}, "to": {t.String()}}
			p.Retry = append(p.Retry, retryLink{Dataset: ds.Dataset, Count: stuck, Href: "/actions/retry?" + v.Encode()})
		}
	}
	if len(p.Retry) > 1 {
		all := retryLink{}
		for _, l := range p.Retry {
			all.Count += l.Count
		}
		u, _ := url.Parse(p.Retry[0].Href)
		q := u.Query()
		q.Del("dataset")
		all.Href = "/actions/retry?" + q.Encode()
		p.RetryAll = &all
	}
	for _, g := range ops.GroupFailures(v.Datasets) {
		fg := failureGroup{FailureGroup: g}
		for i, fp := range g.Partitions {
			if i == mostGroupLinks {
				fg.More = len(g.Partitions) - i
				break
			}
			fg.Links = append(fg.Links, attentionRow{Dataset: fp.Dataset, Day: fp.Day, Phase: fp.Phase, Href: partitionHref(acct.ID, fp.Dataset, fp.Day)})
		}
		p.Failures = append(p.Failures, fg)
	}
	if len(p.Attention) > mostAttention {
		p.Attention, p.AttentionMore = p.Attention[:mostAttention], len(p.Attention)-mostAttention
	}
	p.ToggleHref = "/actions/account?" + url.Values{"account": {acct.ID}, "enabled": {strconv.FormatBool(!acct.Enabled)}}.Encode()
	s.render(w, r, http.StatusOK, "account", acct.Name+" · "+acct.ID,
		[]crumb{{Text: "Fleet", Href: "/"}, {Text: acct.Name + " (" + acct.ID + ")"}}, p)
}
