package console

import (
	"cmp"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
)

// recentWindow is how far back the fleet counts failed attempts.
const recentWindow = 24 * time.Hour

// sortKey is one way to order the fleet table.
type sortKey struct {
	name, title string
	// desc is the order a first click asks for; num right-aligns the column.
	desc, num bool
	// less orders two lines ascending; nil for the default (worst first).
	less func(a, b ops.FleetLine) int
}

func byCount(p ops.Phase) func(a, b ops.FleetLine) int {
	return func(a, b ops.FleetLine) int { return cmp.Compare(a.Counts[p], b.Counts[p]) }
}

// emptyLast orders non-empty strings ascending, empty ones after them.
func emptyLast(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	return strings.Compare(a, b)
}

var sortKeys = func() []sortKey {
	keys := []sortKey{
		{name: "worst", title: "Health", desc: true},
		{name: "account", title: "Account", less: func(a, b ops.FleetLine) int { return strings.Compare(a.Account, b.Account) }},
		{name: "name", title: "Name", less: func(a, b ops.FleetLine) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) }},
	}
	// One column per phase, in ops.Phases order (the template draws them so).
	for _, p := range ops.Phases {
		keys = append(keys, sortKey{name: string(p), title: strings.ToUpper(string(p[:1])) + string(p[1:]), desc: true, num: true, less: byCount(p)})
	}
	return append(keys,
		sortKey{name: "oldest_due", title: "Oldest due", less: func(a, b ops.FleetLine) int { return emptyLast(a.OldestDue, b.OldestDue) }},
		sortKey{name: "last_export", title: "Last export", desc: true, less: func(a, b ops.FleetLine) int {
			return cmp.Compare(a.LastExport+a.LastExportAt, b.LastExport+b.LastExportAt)
		}},
		sortKey{name: "failures", title: "Failed, 24 h", desc: true, num: true, less: func(a, b ops.FleetLine) int { return cmp.Compare(a.RecentFailures, b.RecentFailures) }},
	)
}()

func findSortKey(name string) (sortKey, bool) {
	i := slices.IndexFunc(sortKeys, func(k sortKey) bool { return k.name == name })
	if i < 0 {
		return sortKey{}, false
	}
	return sortKeys[i], true
}

// sortFleet orders lines by key, descending when desc; ties, and the
// default key, go worst first.
func sortFleet(lines []ops.FleetLine, key sortKey, desc bool) {
	slices.SortStableFunc(lines, func(a, b ops.FleetLine) int {
		if key.less != nil {
			c := key.less(a, b)
			if desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		switch {
		case a.Worse(b):
			return -1
		case b.Worse(a):
			return 1
		}
		return 0
	})
}

// column is a header cell of the fleet table: a link that sorts by it.
type column struct {
	Title string
	Href  string
	// Sort is "ascending" or "descending" for the column the table is
	// sorted by (aria-sort), else "".
	Sort string
	Num  bool
}

// fleetRow is one line of the fleet table.
type fleetRow struct {
	ops.FleetLine
	Href string
	// Health is the account's worst condition in words, and Level its
	// class (stopped, failed, behind, ok).
	Health, Level string
}

type fleetPage struct {
	Columns  []column
	Rows     []fleetRow
	Totals   map[ops.Phase]int
	Failures int
	Since    string
	Disabled int
	// Search is the id or name prefix searched for; Next links the next
	// page, First the first one (on a later page).
	Search      string
	Next, First string
}

func health(l ops.FleetLine) (string, string) {
	switch l.Severity() {
	case 3:
		return "stopped retrying", "stopped"
	case 2:
		return "failing, will retry", "failed"
	case 1:
		return "not exported yet since " + l.OldestDue, "behind"
	}
	return "up to date", "ok"
}

// fleet is the fleet page: a page of accounts (?page=), worst first across
// the fleet, or those found by ?q= (an account id, or the start of a
// name); ?sort= and ?order= reorder the page.
func (s *Server) fleet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := cmp.Or(q.Get("sort"), "worst")
	key, ok := findSortKey(name)
	if !ok {
		names := make([]string, len(sortKeys))
		for i, k := range sortKeys {
			names[i] = k.name
		}
		s.problem(w, r, http.StatusBadRequest, "Unknown sort “"+name+"”; the table sorts by "+strings.Join(names, ", ")+".")
		return
	}
	desc := key.desc
	switch o := q.Get("order"); o {
	case "":
	case "asc", "desc":
		desc = o == "desc"
	default:
		s.problem(w, r, http.StatusBadRequest, "Unknown order “"+o+"”: asc or desc.")
		return
	}
	search := strings.TrimSpace(q.Get("q"))
	token := q.Get("page")
	since := s.now().Add(-recentWindow)
	res, err := ops.Fleet(r.Context(), s.cfg.Ledger, ops.FleetOptions{FailuresSince: since, Search: search, Token: token, Limit: s.cfg.FleetPageSize, ReadOnly: s.cfg.ReadOnly})
	if errors.Is(err, ledger.ErrBadPageToken) {
		s.problem(w, r, http.StatusBadRequest, "Unknown page “"+token+"”; start again from the first page.")
		return
	}
	if err != nil {
		s.failed(w, r, err)
		return
	}
	lines := res.Lines
	sortFleet(lines, key, desc)
	p := fleetPage{Totals: map[ops.Phase]int{}, Since: ops.FormatTime(since), Search: search}
	for _, l := range lines {
		h, lvl := health(l)
		p.Rows = append(p.Rows, fleetRow{FleetLine: l, Href: "/accounts/" + url.PathEscape(l.Account), Health: h, Level: lvl})
		for ph, n := range l.Counts {
			p.Totals[ph] += n
		}
		p.Failures += l.RecentFailures
		if !l.Enabled {
			p.Disabled++
		}
	}
	// Links keep the search and the sort; a column's keeps the page too
	// (it sorts this page).
	keep := func(v url.Values) string {
		if search != "" {
			v.Set("q", search)
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	with := func(page string) string {
		v := url.Values{}
		if name != "worst" {
			v.Set("sort", key.name)
		}
		if o := q.Get("order"); o != "" {
			v.Set("order", o)
		}
		if page != "" {
			v.Set("page", page)
		}
		return keep(v)
	}
	if res.Next != "" {
		p.Next = with(res.Next)
	}
	if token != "" {
		p.First = with("")
	}
	for _, k := range sortKeys {
		c := column{Title: k.title, Num: k.num}
		next := k.desc
		if k.name == key.name {
			c.Sort = map[bool]string{true: "descending", false: "ascending"}[desc]
			if k.less != nil {
				next = !desc
			}
		}
		v := url.Values{}
		if k.name != "worst" {
			v.Set("sort", k.name)
			if next != k.desc {
				v.Set("order", map[bool]string{true: "desc", false: "asc"}[next])
			}
		}
		if token != "" {
			v.Set("page", token)
		}
		c.Href = keep(v)
		p.Columns = append(p.Columns, c)
	}
	s.render(w, r, http.StatusOK, "fleet", "Fleet", []crumb{{Text: "Fleet"}}, p)
}
