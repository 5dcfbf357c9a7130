package console

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// order returns the positions of subs in s (-1 when absent).
func order(s string, subs ...string) []int {
	out := make([]int, len(subs))
	for i, sub := range subs {
		out[i] = strings.Index(s, sub)
	}
	return out
}

func increasing(pos []int) bool {
	for i := range pos {
		if pos[i] < 0 || i > 0 && pos[i] < pos[i-1] {
			return false
		}
	}
	return true
}

func wantContains(t *testing.T, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func TestFleetPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	res := f.get("/")
	if res.code != http.StatusOK {
		t.Fatalf("status %d\n%s", res.code, res.body)
	}
	wantContains(t, res.body,
		"3 accounts (1 disabled)",
		"6 failed attempts in the last 24 hours (since 2026-11-29T12:00:00Z)",
		`<span class="health h-stopped" title="stopped retrying">X stopped</span>`,
		`<a href="/accounts/acct_troubled22222222"><code>acct_troubled22222222</code></a>`,
		`Paused Inc <span class="badge off">disabled</span>`,
		// the healthy account's last export: the day, and when (each labelled; they were not)
		`<span class="label">day</span> 2026-11-29<br><small class="muted" title="completed at 2026-11-30T02:30:00Z"><span class="label">exported</span> 2026-11-30 02:30Z</small>`,
		`aria-sort="descending"`,
	)
	// The troubled account: completed 5, running 1, in-queue 1, requested 0,
	// due 1 (the ledger's pending day: one word, as daybook status says
	// it), failed 1, stopped 1, oldest due 25th, 6 failures.
	row := regexp.MustCompile(`(?s)<tr>\s*<td><span class="health h-stopped".*?</tr>`).FindString(res.body)
	cells := regexp.MustCompile(`<td class="num[^"]*">([^<]*)</td>`).FindAllStringSubmatch(row, -1)
	var got []string
	for _, c := range cells {
		got = append(got, c[1])
	}
	if strings.Join(got, " ") != "5 1 1 0 1 1 1 6" {
		t.Errorf("troubled row counts %v, want completed..stopped 5 1 1 0 1 1 1 and 6 failures\n%s", got, row)
	}
	if strings.Contains(strings.ToLower(res.body), "pending") {
		t.Error("the fleet page says pending; status and the console say due")
	}
	if !strings.Contains(row, `<td class="nowrap">2026-11-25</td>`) {
		t.Errorf("troubled row without its oldest due day:\n%s", row)
	}
}

func TestFleetSorts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	tests := []struct {
		query string
		want  []string // account ids, in order
	}{
		{"", []string{troubled, disabled, healthy}}, // worst first: stopped; then nothing due, by id
		{"?sort=worst", []string{troubled, disabled, healthy}},
		{"?sort=account", []string{disabled, healthy, troubled}},
		{"?sort=account&order=desc", []string{troubled, healthy, disabled}},
		{"?sort=name", []string{healthy, disabled, troubled}}, // Healthy Co, Paused Inc, Troubled Ltd
		{"?sort=completed", []string{healthy, troubled, disabled}},
		{"?sort=completed&order=asc", []string{disabled, troubled, healthy}},
		{"?sort=failures", []string{troubled, disabled, healthy}},
		{"?sort=oldest_due", []string{troubled, disabled, healthy}},
		{"?sort=last_export", []string{healthy, troubled, disabled}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res := f.get("/" + tt.query)
			if res.code != http.StatusOK {
				t.Fatalf("status %d", res.code)
			}
			var marks []string
			for _, id := range tt.want {
				marks = append(marks, `<th scope="row"><a href="/accounts/`+id+`">`)
			}
			if pos := order(res.body, marks...); !increasing(pos) {
				t.Errorf("order %v, want %v", pos, tt.want)
			}
		})
	}
	// The sorted column's link reverses it; another column's does not.
	res := f.get("/?sort=completed")
	wantContains(t, res.body, `<a href="/?order=asc&amp;sort=completed">Completed`, `<a href="/?sort=failed">Failed`)

	for _, q := range []string{"?sort=size", "?order=sideways"} {
		res := f.get("/" + q)
		if res.code != http.StatusBadRequest || !strings.Contains(res.body, "Unknown") {
			t.Errorf("%s: status %d, want 400 with the reason\n%s", q, res.code, res.body)
		}
	}
}

// TestFleetPagesAndSearch: the fleet comes a page at a time, worst first
// across pages, each page one read of the fleet index and a link to the
// next; a search finds an account by id or by the start of its name (any
// case); a made-up page is refused.
func TestFleetPagesAndSearch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.FleetPageSize = 2 })
	seed(f)
	res := f.get("/")
	wantContains(t, res.body, "2 accounts on this page", `<a href="/?page=2" rel="next">Next page</a>`)
	if pos := order(res.body, `<a href="/accounts/`+troubled+`">`, `<a href="/accounts/`+disabled+`">`); !increasing(pos) || strings.Contains(res.body, `/accounts/`+healthy+`"`) {
		t.Errorf("first page: want troubled then disabled, not healthy\n%s", res.body)
	}
	f.ledger.fleetReads = 0
	res = f.get("/?page=2")
	wantContains(t, res.body, "1 account on this page", `<a href="/">First page</a>`, `<a href="/accounts/`+healthy+`">`)
	if strings.Contains(res.body, "Next page") || f.ledger.fleetReads != 1 {
		t.Errorf("last page: a next link, or %d fleet reads (want 1)\n%s", f.ledger.fleetReads, res.body)
	}
	// A column sorts the page it is on, and keeps it.
	wantContains(t, f.get("/?page=2").body, `<a href="/?page=2&amp;sort=account">Account`)

	for _, tt := range []struct{ q, want, not string }{
		{healthy, healthy, troubled},   // the id
		{"healthy", healthy, troubled}, // the start of the name, any case
		{"TROUB", troubled, healthy},
	} {
		res := f.get("/?q=" + url.QueryEscape(tt.q))
		wantContains(t, res.body, `<a href="/accounts/`+tt.want+`">`, `value="`+tt.q+`"`, `Show the whole fleet`)
		if strings.Contains(res.body, `/accounts/`+tt.not+`"`) {
			t.Errorf("search %q shows %s", tt.q, tt.not)
		}
	}
	if !f.ledger.stored[healthy] {
		t.Error("a console with actions did not store the summary of the account found by id")
	}
	wantContains(t, f.get("/?q=nobody").body, "No account has the id “nobody” or a name starting with it.")
	if res := f.get("/?page=bogus"); res.code != http.StatusBadRequest || !strings.Contains(res.body, "Unknown page") {
		t.Errorf("a made-up page: status %d\n%s", res.code, res.body)
	}
}

func TestFleetSaysWhenTheLedgerFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	f.ledger.failList = errors.New("ThrottlingException: rate exceeded")
	res := f.get("/")
	if res.code != http.StatusBadGateway || !strings.Contains(res.body, "ThrottlingException: rate exceeded") {
		t.Errorf("status %d\n%s", res.code, res.body)
	}
}

func TestSecurityHeadersAndHosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	res := f.get("/")
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Cache-Control":           "no-store",
	} {
		if !strings.Contains(res.header.Get(h), want) {
			t.Errorf("%s = %q, want %q", h, res.header.Get(h), want)
		}
	}
	// No inline script or style: the policy would block them.
	if strings.Contains(res.body, "<script>") || strings.Contains(res.body, "style=") || strings.Contains(res.body, "<style") {
		t.Error("inline script or style in the page")
	}
	r, _ := http.NewRequest(http.MethodGet, "http://evil.example:8080/", nil)
	if res := f.do(r); res.code != http.StatusMisdirectedRequest {
		t.Errorf("another Host: status %d, want 421", res.code)
	}
	for path, want := range map[string]string{"/static/console.css": "text/css", "/static/console.js": "javascript", "/static/favicon.svg": "image/svg+xml"} {
		res := f.get(path)
		if res.code != http.StatusOK || !strings.Contains(res.header.Get("Content-Type"), want) {
			t.Errorf("%s: status %d, type %q", path, res.code, res.header.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/static/", "/static/nope.css", "/nowhere"} {
		if res := f.get(path); res.code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", path, res.code)
		}
	}
}

func TestAccountPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	res := f.get("/accounts/" + troubled + "?from=2026-11-18&to=2026-11-29")
	if res.code != http.StatusOK {
		t.Fatalf("status %d\n%s", res.code, res.body)
	}
	wantContains(t, res.body,
		"Partitions by day: 2026-11-18 to 2026-11-29",
		`<span class="hm-month">Nov 2026</span>`,
		// two days before the start date have no row; then one link a day
		`<span class="hm-cell empty" title="events 2026-11-18: no ledger row"></span>`,
		`<a class="hm-cell p-completed" href="/accounts/`+troubled+`/partitions/events/2026-11-24" title="events 2026-11-24: completed · generation 2 · 1,234 rows · 55.5 KiB · attempts 2">`,
		`class="hm-cell p-stopped" href="/accounts/`+troubled+`/partitions/events/2026-11-25" title="events 2026-11-25: stopped retrying · attempts 6 · error: source unreachable"><span aria-hidden="true">X</span>`,
		`class="hm-cell p-failed"`, `class="hm-cell p-in-queue"`, `class="hm-cell p-running"`, `class="hm-cell p-due"`,
		// The failed and stopped partitions, grouped by reason code, the
		// raw errors behind a toggle.
		`<div class="failure-group" data-code="internal">`, "(2 partitions, 1 stopped retrying)",
		`<details><summary>Raw errors (2 distinct)</summary>`, `<pre class="error-text">source unreachable</pre>`,
		`href="/actions/retry?account=`+troubled+`&amp;dataset=events&amp;from=2026-11-20&amp;to=2026-11-29">Retry 2 failed or stopped events partitions`,
		`href="/actions/account?account=`+troubled+`&amp;enabled=false">Disable the account`,
		// The legend says what a blank cell is, in the CLI's words.
		"blank: no ledger row: before the start date, or not scheduled by a sweep yet</li>",
		`<span class="hm-cell sample p-completed no-rows" aria-hidden="true">0</span>completed with 0 rows (an outline)</li>`,
		// The re-export form covers every dataset unless one is chosen.
		`<select name="dataset"><option value="" selected>all datasets</option><option>events</option></select>`,
	)
	if n := strings.Count(res.body, `class="hm-cell p-`) + strings.Count(res.body, `class="hm-cell empty"`); n != 12 {
		t.Errorf("%d cells, want one a day for 12 days", n)
	}

	// 400 days on one page: narrow cells, month labels with the year on the
	// first and on January, no symbols.
	res = f.get("/accounts/" + healthy + "?from=2025-10-26&to=2026-11-29")
	if res.code != http.StatusOK {
		t.Fatalf("400 days: status %d", res.code)
	}
	wantContains(t, res.body, "(400 days;", `<span class="hm-month">Jan 2026</span>`, `<span class="hm-month">Nov</span>`, `<div class="hm dense" data-heatmap>`)
	if n := strings.Count(res.body, `class="hm-cell p-`) + strings.Count(res.body, `class="hm-cell empty"`); n != 800 {
		t.Errorf("%d cells, want 400 for each of 2 datasets", n)
	}
	// A dataset filter.
	res = f.get("/accounts/" + healthy + "?dataset=profiles&days=30")
	if strings.Contains(res.body, `aria-label="events, one cell a day"`) || !strings.Contains(res.body, `aria-label="profiles, one cell a day"`) ||
		!strings.Contains(res.body, `<input type="checkbox" name="dataset" value="profiles" checked>`) {
		t.Errorf("dataset filter:\n%s", res.body)
	}
}

// TestAccountPageDefaultWindow: without from, to or days the heatmap runs
// from the account's start date through its last closed day (the last 800
// days of an older account; the start date alone for one starting today),
// dates in ISO form in text inputs, never the browser's locale format.
func TestAccountPageDefaultWindow(t *testing.T) {
	t.Parallel()
	const (
		young  = "acct_younger222222222"
		old    = "acct_older2222222222a"
		future = "acct_startstoday2222a"
	)
	for _, tt := range []struct {
		id, start, want string
	}{
		{troubled, "2026-11-20", "Partitions by day: 2026-11-20 to 2026-11-29"},
		{young, "2026-06-01", "Partitions by day: 2026-06-01 to 2026-11-29"},  // longer than 90 days: still from the start
		{old, "2020-01-01", "Partitions by day: 2024-09-21 to 2026-11-29"},    // the last 800 days
		{future, "2026-11-30", "Partitions by day: 2026-11-30 to 2026-11-30"}, // starts today: nothing closed yet
	} {
		t.Run(tt.id, func(t *testing.T) {
			f := newFixture(t)
			seed(f)
			if tt.id != troubled {
				f.ledger.accounts[tt.id] = account.Account{ID: tt.id, Name: "New", Enabled: true, StartDate: day(tt.start), Datasets: []string{"events"},
					Destination: account.Destination{Bucket: "daybook-exports-test"}}
			}
			res := f.get("/accounts/" + tt.id)
			if res.code != http.StatusOK {
				t.Fatalf("status %d\n%s", res.code, res.body)
			}
			wantContains(t, res.body, tt.want, `aria-current="true">since the start date</a>`,
				`<input type="text" name="from" value="`+tt.want[len("Partitions by day: "):][:10]+`" inputmode="numeric" pattern="[0-9]{4}-[0-9]{2}-[0-9]{2}" placeholder="YYYY-MM-DD"`)
			if strings.Contains(res.body, `type="date"`) {
				t.Error("a date input: the browser shows it in its locale's format, not YYYY-MM-DD")
			}
		})
	}
}

func TestAccountPageRefusesBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	for _, tt := range []struct {
		path string
		code int
		want string
	}{
		{"/accounts/acct_nosuchaccount222", http.StatusNotFound, "No account acct_nosuchaccount222"},
		{"/accounts/42", http.StatusBadRequest, "“42” is not an account id"},
		{"/accounts/" + troubled + "?from=2026-13-01", http.StatusBadRequest, "from “2026-13-01” is not a date"},
		{"/accounts/" + troubled + "?from=2026-11-25&to=2026-11-21", http.StatusBadRequest, "to 2026-11-21 is before from 2026-11-25"},
		{"/accounts/" + troubled + "?days=30&from=2026-11-01", http.StatusBadRequest, "give days, or from and to, not both"},
		{"/accounts/" + troubled + "?days=0", http.StatusBadRequest, "want a number of days from 1 to 800"},
		{"/accounts/" + troubled + "?from=2020-01-01&to=2026-11-29", http.StatusBadRequest, "the page shows at most 800"},
		{"/accounts/" + troubled + "?dataset=profiles", http.StatusBadRequest, "does not export “profiles”; its datasets: events"},
	} {
		if res := f.get(tt.path); res.code != tt.code || !strings.Contains(res.body, tt.want) {
			t.Errorf("%s: status %d, want %d saying %q\n%s", tt.path, res.code, tt.code, tt.want, res.body)
		}
	}
}

func TestPartitionPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	res := f.get("/accounts/" + troubled + "/partitions/events/2026-11-24")
	if res.code != http.StatusOK {
		t.Fatalf("status %d\n%s", res.code, res.body)
	}
	wantContains(t, res.body,
		"completed, generation 2, 1234 rows in 1 file (55.5 KiB)",
		// the attempts: the failure, then the generation
		"<td>2026-11-30T06:59:00Z</td><td class=\"num\">1</td><td>scheduled</td>", `<span class="outcome o-failed">failed</span>`, "source timeout",
		`<span class="outcome o-completed">completed</span></td><td class="num">42s</td>`,
		"Attempt 1 failed at 2026-11-30T07:00:00Z",
		// the manifest, with its key in the bucket
		"s3://daybook-exports-test/daybook/"+troubled+"/v1/events/dt=2026-11-24/_manifest.json",
		"<code>_SUCCESS</code> names generation 2",
		"daybook/"+troubled+"/v1/events/dt=2026-11-24/part-00000.parquet", "<code>q1w2e3==</code>",
		// the day's delivery manifest
		"s3://daybook-exports-test/daybook/"+troubled+"/v1/_manifests/dt=2026-11-24/manifest.json",
		"The day is <strong>complete</strong>", "events: delivered, generation 2, 1,234 rows in 1 file",
		`href="/actions/reexport?account=`+troubled+`&amp;dataset=events&amp;day=2026-11-24">Re-export this day`,
	)
	if strings.Contains(res.body, "Retry…") {
		t.Error("a completed partition offers a retry")
	}

	res = f.get("/accounts/" + troubled + "/partitions/events/2026-11-25")
	wantContains(t, res.body, "stopped retrying after 6 attempts", "Attempt 6 stopped at 2026-11-30T10:00:00Z", "Retry…",
		"no _SUCCESS and no _manifest.json: the partition is not delivered", "No delivery manifest for 2026-11-25 yet")

	// A day without a row, a dataset the account does not export.
	res = f.get("/accounts/" + troubled + "/partitions/profiles/2026-11-24")
	wantContains(t, res.body, "no ledger row", "The account does not export profiles now", "No attempts recorded")

	// The day before and after, and the same day of the other datasets,
	// within the start date and the last closed day.
	for _, tt := range []struct {
		path    string
		want    []string
		notWant []string
	}{
		{"/accounts/" + healthy + "/partitions/events/2026-11-15", []string{
			`<a rel="prev" href="/accounts/` + healthy + `/partitions/events/2026-11-14">← 2026-11-14</a>`,
			`<a rel="next" href="/accounts/` + healthy + `/partitions/events/2026-11-16">2026-11-16 →</a>`,
			`The same day of <a href="/accounts/` + healthy + `/partitions/profiles/2026-11-15">profiles</a>`}, nil},
		{"/accounts/" + healthy + "/partitions/profiles/2026-11-01", []string{ // the start date
			`<a rel="next" href="/accounts/` + healthy + `/partitions/profiles/2026-11-02">`,
			`The same day of <a href="/accounts/` + healthy + `/partitions/events/2026-11-01">events</a>`}, []string{`rel="prev"`}},
		{"/accounts/" + troubled + "/partitions/events/2026-11-29", []string{ // the last closed day; no other dataset
			`<a rel="prev" href="/accounts/` + troubled + `/partitions/events/2026-11-28">`}, []string{`rel="next"`, "The same day of"}},
	} {
		res := f.get(tt.path)
		if res.code != http.StatusOK {
			t.Fatalf("%s: status %d", tt.path, res.code)
		}
		wantContains(t, res.body, tt.want...)
		for _, s := range tt.notWant {
			if strings.Contains(res.body, s) {
				t.Errorf("%s has %s", tt.path, s)
			}
		}
	}
}

func TestPartitionPageSaysTheBucketIsUnreachable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	f.bucket.err = errDenied
	res := f.get("/accounts/" + troubled + "/partitions/events/2026-11-24")
	if res.code != http.StatusOK {
		t.Fatalf("status %d", res.code)
	}
	// In words, the raw error folded below them (it was the raw text).
	wantContains(t, res.body, "<p>The bucket could not be read: access to s3://daybook-exports-test/daybook/"+troubled+"/v1/events/dt=2026-11-24/_SUCCESS was denied: the customer&#39;s role",
		"<details><summary>Raw error</summary><pre class=\"error-text\">get daybook/x/_SUCCESS: bucket: access denied: AccessDenied (RequestID: 7Q3Z)</pre></details>",
		"completed, generation 2") // the ledger's part is still there
	f.srv.cfg.Buckets = BucketsFunc(func(account.Account) (ObjectReader, error) { return nil, errors.New("assume role: AccessDenied") })
	res = f.get("/accounts/" + troubled + "/partitions/events/2026-11-24")
	wantContains(t, res.body, "<p>The bucket could not be read: could not read s3://daybook-exports-test.</p><details><summary>Raw error</summary><pre class=\"error-text\">assume role: AccessDenied</pre>")
}

// TestPartitionPageSaysAFailureInWords: the state at the top of a failed
// partition's page names the cause in words; the raw error (an S3 message
// with request ids) is only in the folded "Raw error" below (it was the
// bold state line).
func TestPartitionPageSaysAFailureInWords(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	row := f.ledger.rows[partition.Key{AccountID: troubled, Dataset: "events", Day: day("2026-11-26")}]
	row.LastError = "destination_denied: put daybook/" + troubled + "/v1/events/dt=2026-11-26/part-00000.parquet: operation error S3: PutObject, " +
		"https response error StatusCode: 403, RequestID: 8TQ4W2, HostID: aGVsbG8=, api error AccessDenied: Access Denied"
	f.ledger.put(row)
	res := f.get("/accounts/" + troubled + "/partitions/events/2026-11-26")
	if res.code != http.StatusOK {
		t.Fatalf("status %d", res.code)
	}
	i := strings.Index(res.body, `<p class="state">`)
	state := res.body[i : i+strings.Index(res.body[i:], "</p>")]
	if !strings.Contains(state, "failed on attempt") || !strings.Contains(state, "destination_denied: ") || strings.Contains(state, "RequestID") || strings.Contains(state, "api error") {
		t.Errorf("the state line: %s", state)
	}
	if !strings.Contains(res.body, `<details><summary>Raw error</summary><pre class="error-text">put daybook/`+troubled) {
		t.Errorf("the raw error is not folded below:\n%s", res.body)
	}
}

func TestPartitionPageRefusesBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	for _, tt := range []struct {
		path string
		code int
		want string
	}{
		{"/accounts/acct_nosuchaccount222/partitions/events/2026-11-24", http.StatusNotFound, "No account acct_nosuchaccount222"},
		{"/accounts/" + troubled + "/partitions/visits/2026-11-24", http.StatusNotFound, "No dataset “visits”"},
		{"/accounts/" + troubled + "/partitions/events/2026-11-31", http.StatusBadRequest, "“2026-11-31” is not a day"},
		{"/accounts/" + troubled + "/partitions/events/2026-11-30", http.StatusNotFound, "2026-11-30 is not closed yet for account " + troubled},
	} {
		if res := f.get(tt.path); res.code != tt.code || !strings.Contains(res.body, tt.want) {
			t.Errorf("%s: status %d, want %d saying %q\n%s", tt.path, res.code, tt.code, tt.want, res.body)
		}
	}
}

// TestPartitionPageShowsSlices: a day running in slices shows each slice's
// state; the plan of an earlier claim is not shown.
func TestPartitionPageShowsSlices(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	day := civil.MustParse("2026-11-28")
	key := partition.Key{AccountID: troubled, Dataset: "events", Day: day}
	f.ledger.mu.Lock()
	row := f.ledger.rows[key]
	row.Key, row.State, row.ClaimToken, row.LeaseUntil = key, ledger.StateRunning, "tok", testNow.Add(time.Hour)
	f.ledger.rows[key] = row
	f.ledger.plans[key] = ledger.SlicePlan{Key: key, Token: "tok", Generation: 1, Slices: 2, StartedAt: testNow.Add(-time.Hour), ExpectedRows: 400_000_000}
	f.ledger.slices[key] = []ledger.Slice{
		{Key: key, Index: 0, Token: "tok", State: ledger.StateCompleted, Attempts: 1, Rows: 200_000_000, Bytes: 7 << 30},
		{Key: key, Index: 1, Token: "tok", State: ledger.StateFailed, Attempts: 2, LastError: "source unavailable: reset"},
	}
	f.ledger.mu.Unlock()
	res := f.get("/accounts/" + troubled + "/partitions/events/2026-11-28")
	if res.code != http.StatusOK {
		t.Fatalf("status %d\n%s", res.code, res.body)
	}
	wantContains(t, res.body, "This attempt exports the day in 2 slices", "400,000,000 rows", "<strong>1 of 2 in</strong> (200,000,000 rows)",
		`<span class="outcome o-failed">failed</span>`, "source unavailable: reset", "7.0 GiB")

	f.ledger.mu.Lock()
	row.ClaimToken = "newer"
	f.ledger.rows[key] = row
	f.ledger.mu.Unlock()
	if res := f.get("/accounts/" + troubled + "/partitions/events/2026-11-28"); strings.Contains(res.body, "Slices</h2>") {
		t.Error("the slices of an earlier claim are shown")
	}
}

// TestPagesSayWhenAndRefresh: every page says when it read the ledger (ISO
// 8601, UTC); the read pages reload themselves, a confirmation does not; a
// refused action links back to the account page that holds its form.
func TestPagesSayWhenAndRefresh(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(f)
	asOf := "as of " + testNow.UTC().Format("2006-01-02T15:04:05Z")
	for path, refresh := range map[string]bool{
		"/": true, "/accounts/" + troubled: true, "/accounts/" + troubled + "/partitions/events/2026-11-24": true,
		"/actions/reexport?account=" + troubled + "&dataset=events&day=2026-11-24": false,
	} {
		res := f.get(path)
		if !strings.Contains(res.body, asOf) {
			t.Errorf("%s lacks %q", path, asOf)
		}
		if got := strings.Contains(res.body, `<meta http-equiv="refresh" content="60">`); got != refresh {
			t.Errorf("%s: refreshes %v, want %v", path, got, refresh)
		}
	}
	res := f.get("/actions/reexport?account=" + troubled + "&dataset=events&day=2026-13-01")
	if !strings.Contains(res.body, `<a class="button secondary" href="/accounts/`+troubled+`">Back</a>`) {
		t.Errorf("a refused action does not link back to its form (status %d):\n%s", res.code, res.body)
	}
}
