package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/partition"
)

// An action is a GET that checks the request and draws a confirmation page
// (changing nothing), then a POST from that page's form that checks it
// again and acts. Both check the request the way the CLI and the exporter
// do (ops.CheckRequest, jobs.CheckRequest).

// hidden is a form field the confirmation page carries to the POST.
type hidden struct{ Name, Value string }

type link struct{ Text, Href string }

type confirmPage struct {
	Heading string
	Lines   []string
	Items   []string
	More    int
	Action  string
	Fields  []hidden
	Button  string
	Cancel  string
	// By is who the action is recorded as requested by.
	By string
	// Nothing: there is nothing to do; the page has no form.
	Nothing bool
	Danger  bool
}

type donePage struct {
	Heading string
	Lines   []string
	Items   []string
	More    int
	Links   []link
}

// mostItems is how many days a confirmation or result page lists.
const mostItems = 40

func listed(items []string) ([]string, int) {
	if len(items) > mostItems {
		return items[:mostItems], len(items) - mostItems
	}
	return items, 0
}

// action refuses every action of a read-only console, and every POST that
// fails the cross-site check (csrf.go) or names no one who asks.
func (s *Server) action(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.ReadOnly {
			s.problem(w, r, http.StatusForbidden, "This console is read-only: it shows the ledger and changes nothing. Use the daybook CLI, or a console started without read-only mode.")
			return
		}
		if r.Method == http.MethodPost {
			if why := s.checkPost(r); why != "" {
				s.cfg.Log.Warn("console: cross-site check refused a request", "path", r.URL.Path, "reason", why)
				s.problem(w, r, http.StatusForbidden, "Refused, nothing was changed: "+why+". Open the page again and confirm from there.")
				return
			}
			if s.cfg.Identity(r) == "" {
				s.problem(w, r, http.StatusForbidden, "Refused, nothing was changed: the request names no caller, and every action records who asked.")
				return
			}
		}
		h(w, r)
	}
}

// values are an action's parameters: the query of a GET, the form of a
// POST (the URL's query is ignored then).
func values(r *http.Request) url.Values {
	if r.Method == http.MethodPost {
		return r.PostForm
	}
	return r.URL.Query()
}

// formFields names the request fields as the forms do.
var formFields = map[string]string{"account_id": "account"}

// requestProblem answers a refused request: 400 for a malformed value, 404
// for an unknown account, 422 for a request the account cannot take, each
// naming the field and the value; any other error is the deployment's.
func (s *Server) requestProblem(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ops.ErrNothingToQueue) {
		s.problem(w, r, http.StatusUnprocessableEntity, "Refused, nothing was changed: "+err.Error()+".")
		return
	}
	var fe *jobs.FieldError
	if !errors.As(err, &fe) {
		s.failed(w, r, err)
		return
	}
	field := fe.Field
	if f, ok := formFields[field]; ok {
		field = f
	}
	msg := field + " " + fe.Reason
	if fe.Value != "" {
		msg = fmt.Sprintf("%s “%s” %s", field, fe.Value, fe.Reason)
	}
	code := http.StatusUnprocessableEntity
	switch {
	case errors.Is(fe, jobs.ErrMalformed):
		code = http.StatusBadRequest
	case fe.Field == "account_id" && strings.Contains(fe.Reason, "no such account"):
		code = http.StatusNotFound
	}
	s.problem(w, r, code, "Refused, nothing was changed: "+msg+".")
}

// requests checks an action's account, dataset and day (or from and
// to): for the dataset asked for or, without one (the forms' default), for
// every dataset of the account, as the CLI does (ops.CheckRequests: a
// snapshot dataset takes its newest closed day alone, or is left out).
// It returns the days of each dataset to act on and what was left out.
func (s *Server) requests(r *http.Request, v url.Values, maxDays int) (account.Account, civil.Date, civil.Date, []ops.Planned, []ops.LeftOut, error) {
	m := jobs.Manual{Kind: jobs.KindManual, AccountID: v.Get("account"), Dataset: v.Get("dataset"), Day: v.Get("day"), From: v.Get("from"), To: v.Get("to")}
	acct, plan, left, err := ops.CheckRequests(r.Context(), s.cfg.Catalog, s.cfg.Ledger, m, jobs.Limits{Now: s.now(), SettleDelay: s.cfg.SettleDelay, MaxDays: maxDays})
	if err != nil {
		return acct, civil.Date{}, civil.Date{}, nil, nil, err
	}
	from, to := plan[0].From, plan[0].To
	for _, p := range plan[1:] {
		if p.From.Before(from) {
			from = p.From
		}
		if to.Before(p.To) {
			to = p.To
		}
	}
	return acct, from, to, plan, left, nil
}

// plannedDatasets names the datasets of a plan.
func plannedDatasets(plan []ops.Planned) []string {
	out := make([]string, len(plan))
	for i, p := range plan {
		out[i] = p.Dataset
	}
	return out
}

// plannedDays counts the partitions of a plan.
func plannedDays(plan []ops.Planned) int {
	n := 0
	for _, p := range plan {
		n += len(p.Days())
	}
	return n
}

// leftOutLines say what an action for every dataset left out, and why.
func leftOutLines(left []ops.LeftOut) []string {
	out := make([]string, len(left))
	for i, l := range left {
		out[i] = "Left out " + l.Dataset + ": " + l.Reason + "."
	}
	return out
}

// datasetsText names the datasets of an action: one by name, or every
// dataset of the account.
func datasetsText(datasets []string, all bool) string {
	if all {
		return "every dataset (" + strings.Join(datasets, ", ") + ")"
	}
	return strings.Join(datasets, ", ")
}

func requestFields(v url.Values) []hidden {
	var out []hidden
	for _, k := range []string{"account", "dataset", "day", "from", "to"} {
		if v.Get(k) != "" {
			out = append(out, hidden{k, v.Get(k)})
		}
	}
	return out
}

func span(from, to civil.Date) string {
	n := from.DaysUntil(to) + 1
	if n == 1 {
		return from.String() + " (1 day)"
	}
	return fmt.Sprintf("%s to %s (%d days)", from, to, n)
}

func (s *Server) noQueue(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Queue == nil || s.cfg.QueueURL == "" {
		s.problem(w, r, http.StatusServiceUnavailable, "This deployment names no jobs queue, so the console cannot send re-export requests.")
		return true
	}
	return false
}

func (s *Server) confirmReexport(w http.ResponseWriter, r *http.Request) {
	if s.noQueue(w, r) {
		return
	}
	v := values(r)
	acct, from, to, plan, left, err := s.requests(r, v, jobs.MaxManualRangeDays)
	if err != nil {
		s.requestProblem(w, r, err)
		return
	}
	datasets := plannedDatasets(plan)
	what := datasetsText(datasets, v.Get("dataset") == "")
	n := plannedDays(plan)
	s.render(w, r, http.StatusOK, "confirm", "Re-export "+what, s.actionCrumbs(acct, "Re-export"), confirmPage{
		Heading: fmt.Sprintf("Re-export %s of %s, %s?", what, acct.Name, span(from, to)),
		Lines: append([]string{
			"One manual re-export request per day and dataset goes to the jobs queue. The exporter claims each day in the ledger " +
				"(a day running now runs again after it finishes) and writes the next generation into " + acct.Destination.Bucket + ".",
			"Readers of the partition see it disappear (no _SUCCESS) while it is written again.",
		}, leftOutLines(left)...),
		Action: "/actions/reexport", Fields: requestFields(v), Button: "Re-export " + plural(n, "partition") + ", " + span(from, to),
		Cancel: actionHref(acct.ID, datasets, v.Get("dataset") == "", from, to), By: s.cfg.Identity(r),
	})
}

func (s *Server) postReexport(w http.ResponseWriter, r *http.Request) {
	if s.noQueue(w, r) {
		return
	}
	v := values(r)
	acct, from, to, plan, left, err := s.requests(r, v, jobs.MaxManualRangeDays)
	if err != nil {
		s.requestProblem(w, r, err)
		return
	}
	datasets := plannedDatasets(plan)
	by := s.cfg.Identity(r)
	var items []string
	count := 0
	for _, pl := range plan {
		var sent []ops.SentRequest
		sent, err = ops.SendReexports(r.Context(), s.cfg.Catalog, s.cfg.Ledger, s.cfg.Queue, s.cfg.QueueURL, acct.ID, pl.Dataset, pl.Days(), by, nil)
		s.cfg.Log.Info("console action", "action", "reexport", "account", acct.ID, "dataset", pl.Dataset, "from", pl.From.String(), "to", pl.To.String(),
			"requested_by", by, "sent", len(sent), "error", errText(err))
		count += len(sent)
		for _, m := range sent {
			items = append(items, pl.Dataset+" "+m.Day+": message "+m.MessageID)
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		s.failed(w, r, fmt.Errorf("%d requests sent before: %w", count, err))
		return
	}
	items, more := listed(items)
	all := v.Get("dataset") == ""
	s.render(w, r, http.StatusOK, "done", "Re-export sent", s.actionCrumbs(acct, "Re-export"), donePage{
		Heading: fmt.Sprintf("Sent %s for %s of %s", plural(count, "re-export request"), datasetsText(datasets, all), acct.ID),
		Lines:   append(s.withQueueNote("Requested by "+by+". The exporter takes them from the queue; the generation goes up when each day is written again."), leftOutLines(left)...),
		Items:   items, More: more,
		Links: []link{{"The partitions", actionHref(acct.ID, datasets, all, from, to)}, {"The account", "/accounts/" + url.PathEscape(acct.ID)}},
	})
}

// stuckDay is a failed or stopped partition.
type stuckDay struct {
	Dataset string
	Day     civil.Date
}

// stuckDays are the failed and stopped days of the plan.
func (s *Server) stuckDays(r *http.Request, acct account.Account, plan []ops.Planned) ([]stuckDay, error) {
	var days []stuckDay
	for _, pl := range plan {
		rows, err := s.cfg.Ledger.List(r.Context(), acct.ID, pl.Dataset, pl.From, pl.To)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if p := ops.Of(row); p == ops.Failed || p == ops.Stopped {
				days = append(days, stuckDay{pl.Dataset, row.Day})
			}
		}
	}
	return days, nil
}

// stuckStrings lists days by day, or by dataset and day when the action
// covers more than one dataset.
func stuckStrings(days []stuckDay, datasets []string) []string {
	out := make([]string, len(days))
	for i, d := range days {
		out[i] = d.Day.String()
		if len(datasets) > 1 {
			out[i] = d.Dataset + " " + out[i]
		}
	}
	return out
}

func (s *Server) confirmRetry(w http.ResponseWriter, r *http.Request) {
	v := values(r)
	acct, from, to, plan, left, err := s.requests(r, v, maxWindowDays)
	if err != nil {
		s.requestProblem(w, r, err)
		return
	}
	datasets := plannedDatasets(plan)
	all := v.Get("dataset") == ""
	what := datasetsText(datasets, all)
	pre, post := datasets[0]+" ", ""
	if all {
		pre, post = "", ", "+what
	}
	days, err := s.stuckDays(r, acct, plan)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	p := confirmPage{
		Heading: fmt.Sprintf("Retry the failed and stopped %spartitions of %s%s, %s?", pre, acct.Name, post, span(from, to)),
		Action:  "/actions/retry", Fields: requestFields(v), Cancel: actionHref(acct.ID, datasets, all, from, to), By: s.cfg.Identity(r),
		Button: "Retry " + plural(len(days), "partition"),
	}
	if len(days) == 0 {
		p.Heading = fmt.Sprintf("Nothing to retry: no %spartition of %s%s is failed or stopped, %s.", pre, acct.ID, post, span(from, to))
		p.Nothing = true
	} else {
		p.Lines = []string{"Each partition below is made due (waiting for a sweep) with a fresh count of attempts; the sweeper claims due partitions first, " +
			"oldest first, within its caps. A partition that is running by then is marked to run again when it finishes."}
		p.Items, p.More = listed(stuckStrings(days, datasets))
	}
	p.Lines = append(p.Lines, leftOutLines(left)...)
	s.render(w, r, http.StatusOK, "confirm", "Retry "+what, s.actionCrumbs(acct, "Retry"), p)
}

func (s *Server) postRetry(w http.ResponseWriter, r *http.Request) {
	v := values(r)
	acct, from, to, plan, left, err := s.requests(r, v, maxWindowDays)
	if err != nil {
		s.requestProblem(w, r, err)
		return
	}
	datasets := plannedDatasets(plan)
	by := s.cfg.Identity(r)
	days, err := s.stuckDays(r, acct, plan)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	var res ledger.RequeueResult
	for _, ds := range datasets {
		var dd []civil.Date
		for _, d := range days {
			if d.Dataset == ds {
				dd = append(dd, d.Day)
			}
		}
		var got ledger.RequeueResult
		got, err = ops.Retry(r.Context(), s.cfg.Catalog, s.cfg.Ledger, acct.ID, ds, dd, partition.ReasonManual, by, nil)
		res.Queued += got.Queued
		res.Created += got.Created
		res.RerunRequested += got.RerunRequested
		s.cfg.Log.Info("console action", "action", "retry", "account", acct.ID, "dataset", ds, "from", from.String(), "to", to.String(),
			"requested_by", by, "queued", got.Queued, "rerun_requested", got.RerunRequested, "error", errText(err))
		if err != nil {
			s.failed(w, r, fmt.Errorf("%s: %w", ds, err))
			return
		}
	}
	items, more := listed(stuckStrings(days, datasets))
	word := "partition"
	if len(datasets) == 1 {
		word = datasets[0] + " partition"
	}
	s.render(w, r, http.StatusOK, "done", "Made due", s.actionCrumbs(acct, "Retry"), donePage{
		Heading: fmt.Sprintf("Made %s of %s due again", plural(res.Queued, word), acct.ID),
		Lines: append(s.withQueueNote(fmt.Sprintf("Requested by %s. %d running now were marked to run again when they finish. The sweeper claims the due ones next.",
			by, res.RerunRequested)), leftOutLines(left)...),
		Items: items, More: more,
		Links: []link{{"The account", "/accounts/" + url.PathEscape(acct.ID)}},
	})
}

// enableRequest reads ?account= and ?enabled=true|false.
func (s *Server) enableRequest(w http.ResponseWriter, r *http.Request) (account.Account, bool, bool) {
	v := values(r)
	enable, ok := map[string]bool{"true": true, "false": false}[v.Get("enabled")]
	if !ok {
		s.problem(w, r, http.StatusBadRequest, "Refused, nothing was changed: enabled “"+v.Get("enabled")+"”: want true or false.")
		return account.Account{}, false, false
	}
	acct, found := s.getAccount(w, r, v.Get("account"))
	return acct, enable, found
}

func enableWords(enable bool) (verb, done string) {
	if enable {
		return "Enable", "enabled"
	}
	return "Disable", "disabled"
}

func (s *Server) confirmEnable(w http.ResponseWriter, r *http.Request) {
	acct, enable, ok := s.enableRequest(w, r)
	if !ok {
		return
	}
	verb, done := enableWords(enable)
	p := confirmPage{
		Heading: fmt.Sprintf("%s account %s (%s)?", verb, acct.Name, acct.ID),
		Action:  "/actions/account", Fields: []hidden{{"account", acct.ID}, {"enabled", fmt.Sprint(enable)}},
		Button: verb + " the account", Cancel: "/accounts/" + url.PathEscape(acct.ID), By: s.cfg.Identity(r), Danger: !enable,
	}
	switch {
	case acct.Enabled == enable:
		p.Heading, p.Nothing = fmt.Sprintf("Account %s (%s) is already %s; nothing to do.", acct.Name, acct.ID, done), true
	case enable:
		p.Lines = []string{"The sweeper schedules its closed days again, and the exporter takes its jobs."}
	default:
		p.Lines = []string{"The sweeper skips the account and the exporter refuses its jobs until it is enabled again. Its ledger and its files stay as they are."}
	}
	s.render(w, r, http.StatusOK, "confirm", verb+" account", s.actionCrumbs(acct, verb), p)
}

func (s *Server) postEnable(w http.ResponseWriter, r *http.Request) {
	acct, enable, ok := s.enableRequest(w, r)
	if !ok {
		return
	}
	by := s.cfg.Identity(r)
	acct, changed, err := ops.SetEnabled(r.Context(), s.cfg.Ledger, acct.ID, enable, by)
	s.cfg.Log.Info("console action", "action", "set_enabled", "account", acct.ID, "enabled", enable, "changed", changed, "requested_by", by, "error", errText(err))
	if err != nil {
		s.failed(w, r, err)
		return
	}
	verb, done := enableWords(enable)
	heading := fmt.Sprintf("Account %s (%s) %s", acct.Name, acct.ID, done)
	if !changed {
		heading = fmt.Sprintf("Account %s (%s) was already %s; nothing changed", acct.Name, acct.ID, done)
	}
	s.render(w, r, http.StatusOK, "done", verb+" account", s.actionCrumbs(acct, verb), donePage{
		Heading: heading, Lines: []string{"Requested by " + by + "."},
		Links: []link{{"The account", "/accounts/" + url.PathEscape(acct.ID)}},
	})
}

func (s *Server) actionCrumbs(acct account.Account, what string) []crumb {
	return []crumb{{Text: "Fleet", Href: "/"}, {Text: acct.Name + " (" + acct.ID + ")", Href: "/accounts/" + url.PathEscape(acct.ID)}, {Text: what}}
}

// actionHref links what an action covers: partitionOrAccount for one
// dataset, the account page of the range for every dataset.
func actionHref(accountID string, datasets []string, all bool, from, to civil.Date) string {
	if !all && len(datasets) == 1 {
		return partitionOrAccount(accountID, datasets[0], from, to)
	}
	return "/accounts/" + url.PathEscape(accountID) + "?" + url.Values{"from": {from.String()}, "to": {to.String()}}.Encode()
}

// partitionOrAccount links one day's partition page, or the account page
// showing a range.
func partitionOrAccount(accountID, ds string, from, to civil.Date) string {
	if from == to {
		return partitionHref(accountID, ds, from.String())
	}
	return "/accounts/" + url.PathEscape(accountID) + "?" + url.Values{"dataset": {ds}, "from": {from.String()}, "to": {to.String()}}.Encode()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// withQueueNote adds Config.QueueNote, when set, to a done page's lines.
func (s *Server) withQueueNote(lines ...string) []string {
	if s.cfg.QueueNote != "" {
		lines = append(lines, s.cfg.QueueNote)
	}
	return lines
}
