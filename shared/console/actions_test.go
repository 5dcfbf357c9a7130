package console

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// hiddenToken is the csrf field of a confirmation page.
func hiddenToken(body string) string {
	m := regexp.MustCompile(`<input type="hidden" name="csrf" value="([^"]+)">`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestConfirmationPagesChangeNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path string
		want       []string
		form       bool
	}{
		{"re-export a day", "/actions/reexport?" + form("account", troubled, "dataset", "events", "day", "2026-11-24").Encode(),
			[]string{"Re-export events of Troubled Ltd, 2026-11-24 (1 day)?", `<input type="hidden" name="day" value="2026-11-24">`,
				"Recorded as requested by <strong>arn:aws:iam::123456789012:user/alice</strong>"}, true},
		{"re-export a range", "/actions/reexport?" + form("account", troubled, "dataset", "events", "from", "2026-11-20", "to", "2026-11-22").Encode(),
			[]string{"2026-11-20 to 2026-11-22 (3 days)", `<input type="hidden" name="from" value="2026-11-20">`}, true},
		{"retry lists the failed and stopped days", "/actions/retry?" + form("account", troubled, "dataset", "events", "from", "2026-11-20", "to", "2026-11-29").Encode(),
			[]string{"Retry the failed and stopped events partitions", "<li>2026-11-25</li>", "<li>2026-11-26</li>", "Retry 2 partitions"}, true},
		{"retry with nothing to do", "/actions/retry?" + form("account", healthy, "dataset", "events", "from", "2026-11-01", "to", "2026-11-29").Encode(),
			[]string{"Nothing to retry: no events partition of " + healthy + " is failed or stopped"}, false},
		{"re-export without a dataset: every dataset of the account", "/actions/reexport?" + form("account", healthy, "day", "2026-11-24").Encode(),
			[]string{"Re-export every dataset (events, profiles) of Healthy Co, 2026-11-24 (1 day)?", "Re-export 2 partitions, 2026-11-24 (1 day)"}, true},
		{"retry without a dataset: every dataset of the account", "/actions/retry?" + form("account", healthy, "from", "2026-11-01", "to", "2026-11-29").Encode(),
			[]string{"Nothing to retry: no partition of " + healthy + ", every dataset (events, profiles) is failed or stopped"}, false},
		{"disable", "/actions/account?" + form("account", healthy, "enabled", "false").Encode(),
			[]string{"Disable account Healthy Co (" + healthy + ")?", "The sweeper skips the account"}, true},
		{"enable an enabled account", "/actions/account?" + form("account", healthy, "enabled", "true").Encode(),
			[]string{"is already enabled; nothing to do"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			seed(f)
			before := f.ledger.snapshot(t)
			res := f.get(tt.path)
			if res.code != http.StatusOK {
				t.Fatalf("status %d\n%s", res.code, res.body)
			}
			wantContains(t, res.body, tt.want...)
			token := hiddenToken(res.body)
			if hasForm := strings.Contains(res.body, `<form method="post"`); hasForm != tt.form || (tt.form && !validToken(token)) {
				t.Errorf("form %v (token %q), want %v", hasForm, token, tt.form)
			}
			if tt.form && !strings.Contains(res.header.Get("Set-Cookie"), csrfCookie+"="+token) {
				t.Errorf("the form's token is not the session cookie: %q vs %q", res.header.Get("Set-Cookie"), token)
			}
			if after := f.ledger.snapshot(t); after != before || len(f.queue.sent()) != 0 {
				t.Error("a confirmation page changed the ledger or sent a message")
			}
		})
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	t.Run("re-export sends one request per day with who asked", func(t *testing.T) {
		f := newFixture(t)
		seed(f)
		res := f.post("/actions/reexport", form("account", troubled, "dataset", "events", "from", "2026-11-20", "to", "2026-11-22"), f.session())
		if res.code != http.StatusOK || !strings.Contains(res.body, "Sent 3 re-export requests for events of "+troubled) {
			t.Fatalf("status %d\n%s", res.code, res.body)
		}
		sent := f.queue.sent()
		if len(sent) != 3 {
			t.Fatalf("%d messages, want 3", len(sent))
		}
		for i, body := range sent {
			m, err := jobs.Parse(datasettest.Example(t), body)
			if err != nil || m.Manual == nil || m.Manual.AccountID != troubled || m.Manual.Day != []string{"2026-11-20", "2026-11-21", "2026-11-22"}[i] ||
				m.Manual.RequestedBy != "arn:aws:iam::123456789012:user/alice" {
				t.Errorf("message %s (%v)", body, err)
			}
		}
		if !strings.Contains(f.log.String(), "requested_by=arn:aws:iam::123456789012:user/alice") {
			t.Errorf("the action is not logged with who asked:\n%s", f.log.String())
		}
	})
	t.Run("re-export without a dataset sends every dataset of the account", func(t *testing.T) {
		f := newFixture(t)
		seed(f)
		res := f.post("/actions/reexport", form("account", healthy, "from", "2026-11-23", "to", "2026-11-24"), f.session())
		if res.code != http.StatusOK || !strings.Contains(res.body, "Sent 4 re-export requests for every dataset (events, profiles) of "+healthy) {
			t.Fatalf("status %d\n%s", res.code, res.body)
		}
		var got []string
		for _, body := range f.queue.sent() {
			m, err := jobs.Parse(datasettest.Example(t), body)
			if err != nil || m.Manual == nil {
				t.Fatalf("message %s (%v)", body, err)
			}
			got = append(got, m.Manual.Dataset+" "+m.Manual.Day)
		}
		if want := "events 2026-11-23,events 2026-11-24,profiles 2026-11-23,profiles 2026-11-24"; strings.Join(got, ",") != want {
			t.Errorf("sent %v, want %s", got, want)
		}
	})
	t.Run("retry without a dataset covers every dataset", func(t *testing.T) {
		f := newFixture(t)
		seed(f)
		res := f.post("/actions/retry", form("account", troubled, "from", "2026-11-20", "to", "2026-11-29"), f.session())
		if res.code != http.StatusOK || !strings.Contains(res.body, "Made 2 events partitions of "+troubled+" due again") {
			t.Fatalf("status %d\n%s", res.code, res.body)
		}
	})
	t.Run("retry makes the failed and stopped days due, and only those", func(t *testing.T) {
		f := newFixture(t)
		seed(f)
		res := f.post("/actions/retry", form("account", troubled, "dataset", "events", "from", "2026-11-20", "to", "2026-11-29"), f.session())
		if res.code != http.StatusOK || !strings.Contains(res.body, "Made 2 events partitions of "+troubled+" due again") {
			t.Fatalf("status %d\n%s", res.code, res.body)
		}
		for d, want := range map[string]ledger.State{"2026-11-24": ledger.StateCompleted, "2026-11-25": ledger.StateQueued,
			"2026-11-26": ledger.StateQueued, "2026-11-27": ledger.StateRunning, "2026-11-29": ledger.StatePending} {
			r := f.ledger.rows[partition.Key{AccountID: troubled, Dataset: "events", Day: day(d)}]
			if r.State != want || (want == ledger.StateQueued && (r.Attempts != 0 || r.Stopped || r.Reason != partition.ReasonManual)) {
				t.Errorf("%s: %+v, want %s", d, r, want)
			}
		}
	})
	t.Run("the earlier /actions/requeue is retry", func(t *testing.T) {
		// Bookmarks and pages open from before the rename keep working:
		// the confirmation posts to /actions/retry, a post to the old path
		// passes the same cross-site check and does the same.
		f := newFixture(t)
		seed(f)
		q := form("account", troubled, "dataset", "events", "from", "2026-11-20", "to", "2026-11-29")
		page := f.get("/actions/requeue?" + q.Encode())
		if page.code != http.StatusOK || !strings.Contains(page.body, "Retry the failed and stopped events partitions") ||
			!strings.Contains(page.body, `action="/actions/retry"`) {
			t.Fatalf("GET /actions/requeue: status %d\n%s", page.code, page.body)
		}
		if res := f.post("/actions/requeue", q, ""); res.code != http.StatusForbidden || f.ledger.rows[partition.Key{AccountID: troubled, Dataset: "events", Day: day("2026-11-25")}].State == ledger.StateQueued {
			t.Errorf("a POST to /actions/requeue without the session passed the cross-site check: status %d\n%s", res.code, res.body)
		}
		res := f.post("/actions/requeue", q, f.session())
		if res.code != http.StatusOK || !strings.Contains(res.body, "Made 2 events partitions of "+troubled+" due again") {
			t.Fatalf("POST /actions/requeue: status %d\n%s", res.code, res.body)
		}
		if r := f.ledger.rows[partition.Key{AccountID: troubled, Dataset: "events", Day: day("2026-11-25")}]; r.State != ledger.StateQueued {
			t.Errorf("2026-11-25 after POST /actions/requeue: %+v", r)
		}
	})
	t.Run("disable and enable", func(t *testing.T) {
		f := newFixture(t)
		seed(f)
		token := f.session()
		for _, enabled := range []bool{false, true} {
			res := f.post("/actions/account", form("account", healthy, "enabled", map[bool]string{true: "true", false: "false"}[enabled]), token)
			if res.code != http.StatusOK || f.ledger.accounts[healthy].Enabled != enabled {
				t.Errorf("enabled=%v: status %d, stored %v\n%s", enabled, res.code, f.ledger.accounts[healthy].Enabled, res.body)
			}
		}
	})
	t.Run("a re-export shows the days requested until they are claimed", func(t *testing.T) {
		f := newFixture(t)
		seed(f)
		res := f.post("/actions/reexport", form("account", troubled, "dataset", "events", "day", "2026-11-24"), f.session())
		if res.code != http.StatusOK {
			t.Fatalf("status %d\n%s", res.code, res.body)
		}
		page := f.get("/accounts/" + troubled + "?from=2026-11-20&to=2026-11-29")
		for _, want := range []string{
			`class="hm-cell p-requested" href="/accounts/` + troubled + `/partitions/events/2026-11-24"`,
			"re-export requested, in the jobs queue", // the legend (ops.phases)
			"re-export requested by arn:aws:iam::123456789012:user/alice at 2026-11-30T12:00:00Z, waiting in the jobs queue for an exporter; generation 2 stays delivered",
		} {
			if !strings.Contains(page.body, want) {
				t.Errorf("the account page lacks %q:\n%s", want, page.body)
			}
		}
		part := f.get("/accounts/" + troubled + "/partitions/events/2026-11-24")
		if !strings.Contains(part.body, `class="reexport-requested">requested by arn:aws:iam::123456789012:user/alice at 2026-11-30T12:00:00Z`) {
			t.Errorf("the partition page does not say the re-export was requested:\n%s", part.body)
		}
	})
	t.Run("a queue that fails is said, and the days are not shown requested", func(t *testing.T) {
		f := newFixture(t)
		seed(f)
		f.queue.fail = errors.New("AWS.SimpleQueueService.NonExistentQueue")
		res := f.post("/actions/reexport", form("account", troubled, "dataset", "events", "day", "2026-11-24"), f.session())
		if res.code != http.StatusBadGateway || !strings.Contains(res.body, "NonExistentQueue") {
			t.Errorf("status %d\n%s", res.code, res.body)
		}
		if r := f.ledger.rows[partition.Key{AccountID: troubled, Dataset: "events", Day: day("2026-11-24")}]; ledger.PhaseOf(r) != ledger.PhaseCompleted {
			t.Errorf("a request that was not sent shows: phase %s, %+v", ledger.PhaseOf(r), r)
		}
	})
}

// TestBadRequestsChangeNothing: every refusal is a 4xx naming the field and
// the value, from the confirmation page and from a POST alike, and neither
// the ledger nor the queue sees anything.
func TestBadRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	re := func(kv ...string) (string, url.Values) {
		return "/actions/reexport", form(append([]string{"dataset", "events"}, kv...)...)
	}
	rq := func(kv ...string) (string, url.Values) {
		return "/actions/retry", form(append([]string{"dataset", "events"}, kv...)...)
	}
	tests := []struct {
		name string
		path string
		form url.Values
		code int
		want string
	}{
		{"unknown account", "", nil, http.StatusNotFound, "account “acct_nosuchaccount222” is not an account (no such account)"},
		{"malformed account id", "", nil, http.StatusBadRequest, "account “acct_x” is not an account id"},
		{"malformed day", "", nil, http.StatusBadRequest, "day “2026-13-01” is not a date (YYYY-MM-DD)"},
		{"today", "", nil, http.StatusUnprocessableEntity, "day “2026-11-30” is not closed yet for account " + troubled},
		{"a day in the future", "", nil, http.StatusUnprocessableEntity, "day “2027-01-01” is not closed yet"},
		{"before the start date", "", nil, http.StatusUnprocessableEntity, "day “2026-11-01” is before account " + troubled + "&#39;s start date 2026-11-20"},
		{"a dataset the account does not export", "", nil, http.StatusUnprocessableEntity, "dataset “profiles” is not enabled for account " + troubled},
		{"unknown dataset", "", nil, http.StatusBadRequest, "dataset “visits” is not a dataset"},
		{"a disabled account", "", nil, http.StatusUnprocessableEntity, "account “" + disabled + "” is disabled"},
		{"day and range", "", nil, http.StatusBadRequest, "give day or from and to, not both"},
		{"a range too long to re-export", "", nil, http.StatusBadRequest, "at most 366 per request"},
		{"a retry range in the future", "", nil, http.StatusUnprocessableEntity, "to “2026-12-05” is not closed yet"},
		{"to before from", "", nil, http.StatusBadRequest, "to “2026-11-21” is before from"},
		{"enabled is not a boolean", "/actions/account", form("account", healthy, "enabled", "maybe"), http.StatusBadRequest, "enabled “maybe”: want true or false"},
		{"enable an unknown account", "/actions/account", form("account", "acct_nosuchaccount222", "enabled", "true"), http.StatusNotFound, "No account acct_nosuchaccount222"},
	}
	fill := map[string]func() (string, url.Values){
		"unknown account":       func() (string, url.Values) { return re("account", "acct_nosuchaccount222", "day", "2026-11-24") },
		"malformed account id":  func() (string, url.Values) { return re("account", "acct_x", "day", "2026-11-24") },
		"malformed day":         func() (string, url.Values) { return re("account", troubled, "day", "2026-13-01") },
		"today":                 func() (string, url.Values) { return re("account", troubled, "day", "2026-11-30") },
		"a day in the future":   func() (string, url.Values) { return re("account", troubled, "day", "2027-01-01") },
		"before the start date": func() (string, url.Values) { return re("account", troubled, "day", "2026-11-01") },
		"a dataset the account does not export": func() (string, url.Values) {
			p, v := re("account", troubled, "day", "2026-11-24")
			v.Set("dataset", "profiles")
			return p, v
		},
		"unknown dataset": func() (string, url.Values) {
			p, v := re("account", troubled, "day", "2026-11-24")
			v.Set("dataset", "visits")
			return p, v
		},
		"a disabled account": func() (string, url.Values) { return re("account", disabled, "day", "2026-11-24") },
		"day and range": func() (string, url.Values) {
			return re("account", troubled, "day", "2026-11-24", "from", "2026-11-20", "to", "2026-11-24")
		},
		"a range too long to re-export": func() (string, url.Values) { return re("account", troubled, "from", "2024-01-01", "to", "2026-11-24") },
		"a retry range in the future":   func() (string, url.Values) { return rq("account", troubled, "from", "2026-11-20", "to", "2026-12-05") },
		"to before from":                func() (string, url.Values) { return rq("account", troubled, "from", "2026-11-22", "to", "2026-11-21") },
	}
	for _, tt := range tests {
		if f, ok := fill[tt.name]; ok {
			tt.path, tt.form = f()
		}
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			t.Run(tt.name+" "+method, func(t *testing.T) {
				f := newFixture(t)
				seed(f)
				before := f.ledger.snapshot(t)
				var res response
				if method == http.MethodGet {
					res = f.get(tt.path + "?" + tt.form.Encode())
				} else {
					res = f.post(tt.path, tt.form, f.session())
				}
				if res.code != tt.code || !strings.Contains(res.body, tt.want) {
					t.Errorf("status %d, want %d; page lacks %q\n%s", res.code, tt.code, tt.want, res.body)
				}
				if f.ledger.snapshot(t) != before || len(f.queue.sent()) != 0 {
					t.Error("a refused request changed the ledger or sent a message")
				}
			})
		}
	}
}

func TestReadOnlyHasNoActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, readOnly)
	seed(f)
	before := f.ledger.snapshot(t)
	// A search by id too: the account is shown, its summary not stored
	// (the snapshot below; a deployed read-only console's role may not
	// write the ledger).
	if res := f.get("/?q=" + troubled); !strings.Contains(res.body, `<a href="/accounts/`+troubled+`">`) {
		t.Errorf("search by id: status %d\n%s", res.code, res.body)
	}
	for _, path := range []string{"/accounts/" + troubled, "/accounts/" + troubled + "/partitions/events/2026-11-25", "/", "/?q=" + troubled} {
		res := f.get(path)
		if res.code != http.StatusOK {
			t.Fatalf("%s: status %d", path, res.code)
		}
		for _, action := range []string{"/actions/", "Re-export", "Retry", "Disable the account", `method="post"`} {
			if strings.Contains(res.body, action) {
				t.Errorf("%s offers %q in read-only mode", path, action)
			}
		}
		if !strings.Contains(res.body, `<span class="badge ro"`) {
			t.Errorf("%s does not say it is read-only", path)
		}
	}
	token := f.session()
	for _, tt := range []struct{ path, query string }{
		{"/actions/reexport", form("account", troubled, "dataset", "events", "day", "2026-11-24").Encode()},
		{"/actions/retry", form("account", troubled, "dataset", "events", "from", "2026-11-20", "to", "2026-11-29").Encode()},
		{"/actions/account", form("account", healthy, "enabled", "false").Encode()},
	} {
		if res := f.get(tt.path + "?" + tt.query); res.code != http.StatusForbidden || !strings.Contains(res.body, "This console is read-only") {
			t.Errorf("GET %s: status %d\n%s", tt.path, res.code, res.body)
		}
		v, _ := url.ParseQuery(tt.query)
		if res := f.post(tt.path, v, token); res.code != http.StatusForbidden {
			t.Errorf("POST %s: status %d", tt.path, res.code)
		}
	}
	if f.ledger.snapshot(t) != before || len(f.queue.sent()) != 0 {
		t.Error("a read-only console changed the ledger or sent a message")
	}
}

func TestCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	ok := form("account", troubled, "dataset", "events", "day", "2026-11-24")
	tests := []struct {
		name  string
		token bool
		edit  func(r *http.Request)
		want  string
	}{
		{"no session cookie", false, func(r *http.Request) {}, "the session token cookie is missing"},
		{"a token from another session", true, func(r *http.Request) {
			r.Header.Set("Cookie", csrfCookie+"=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		}, "does not match the cookie"},
		{"no token in the form", true, func(r *http.Request) {
			r.Body = http.NoBody
			r.ContentLength = 0
		}, "does not match the cookie"},
		{"another site", true, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, "came from another site (Sec-Fetch-Site: cross-site)"},
		{"a sibling site", true, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }, "Sec-Fetch-Site: same-site"},
		{"another origin", true, func(r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "http://evil.example")
		}, "came from another origin (http://evil.example)"},
		{"an opaque origin", true, func(r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "null")
		}, "Origin: null"},
		{"neither header", true, func(r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Del("Origin")
		}, "says neither where it came from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			seed(f)
			before := f.ledger.snapshot(t)
			token := ""
			if tt.token {
				token = f.session()
			}
			res := f.post("/actions/reexport", ok, token, tt.edit)
			if res.code != http.StatusForbidden || !strings.Contains(res.body, tt.want) {
				t.Errorf("status %d, want 403 saying %q\n%s", res.code, tt.want, res.body)
			}
			if f.ledger.snapshot(t) != before || len(f.queue.sent()) != 0 {
				t.Error("a refused request changed the ledger or sent a message")
			}
		})
	}
	t.Run("an action without an identity", func(t *testing.T) {
		f := newFixture(t, func(c *Config) { c.Identity = func(*http.Request) string { return "" } })
		seed(f)
		if res := f.post("/actions/reexport", ok, f.session()); res.code != http.StatusForbidden || !strings.Contains(res.body, "names no caller") || len(f.queue.sent()) != 0 {
			t.Errorf("status %d, %d sent\n%s", res.code, len(f.queue.sent()), res.body)
		}
	})
	t.Run("over HTTPS the cookie is __Host- and Secure", func(t *testing.T) {
		f := newFixture(t, func(c *Config) { c.Secure = true })
		seed(f)
		res := f.get("/")
		c := (&http.Response{Header: res.header}).Cookies()
		if len(c) != 1 || c[0].Name != csrfSecureCookie || !c[0].Secure || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/" {
			t.Fatalf("cookie %+v", c)
		}
		post := func(origin string) response {
			return f.post("/actions/reexport", ok, "", func(r *http.Request) {
				form := ok.Encode() + "&csrf=" + c[0].Value
				r.Body, r.ContentLength = readCloser(form), int64(len(form))
				r.AddCookie(c[0])
				r.Header.Set("Origin", origin)
			})
		}
		if res := post("http://console.test"); res.code != http.StatusForbidden {
			t.Errorf("an http origin to an https console: status %d", res.code)
		}
		if res := post("https://console.test"); res.code != http.StatusOK || len(f.queue.sent()) != 1 {
			t.Errorf("status %d\n%s", res.code, res.body)
		}
	})
}

// TestEveryDatasetWithASnapshot: the console's retry and re-export
// without a dataset do what the CLI does for an account that also
// receives a snapshot dataset (copied for the newest closed day only): the
// other datasets take the range, the snapshot dataset its newest closed
// day alone when the range holds it and is left out otherwise, and the
// confirmation and result pages say what was left out and why; a range
// that leaves every dataset out is refused, naming why. On the old code
// the whole request was refused because of the snapshot dataset.
func TestEveryDatasetWithASnapshot(t *testing.T) {
	t.Parallel()
	cat := datasettest.Catalog(t, append(example.YAML(), `
  - name: members
    version: 1
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    columns:
      - {name: email, type: string}
      - {name: attributes, type: json, nullable: true}
`...))
	const both, only = "acct_snapshots2222222", "acct_snapshotonly2222"
	f := newFixture(t, func(c *Config) { c.Catalog = cat })
	for id, ds := range map[string][]string{both: {"events", "members"}, only: {"members"}} {
		f.ledger.accounts[id] = account.Account{ID: id, Name: "Snap " + id[5:9], Enabled: true, StartDate: day("2026-11-20"), Datasets: ds,
			Destination: account.Destination{Bucket: "daybook-exports-test"}}
	}
	for _, k := range []partition.Key{{AccountID: both, Dataset: "events", Day: day("2026-11-21")}, {AccountID: both, Dataset: "members", Day: day("2026-11-29")}} {
		f.ledger.put(ledger.Row{Key: k, State: ledger.StateFailed, Attempts: 1, LastError: "source unreachable", UpdatedAt: testNow.Add(-time.Hour)})
	}
	const newestOnly = "members: a snapshot dataset is copied for the newest closed day only: 2026-11-29 alone, the other days of 2026-11-20..2026-11-29 left out"

	page := f.get("/actions/retry?" + form("account", both, "from", "2026-11-20", "to", "2026-11-29").Encode())
	for _, want := range []string{"events 2026-11-21", "members 2026-11-29", "Left out " + newestOnly} {
		if page.code != http.StatusOK || !strings.Contains(page.body, want) {
			t.Errorf("retry confirmation lacks %q: status %d\n%s", want, page.code, page.body)
		}
	}
	res := f.post("/actions/retry", form("account", both, "from", "2026-11-20", "to", "2026-11-29"), f.session())
	if res.code != http.StatusOK || !strings.Contains(res.body, "Made 2 partitions of "+both+" due again") || !strings.Contains(res.body, "Left out "+newestOnly) {
		t.Errorf("retry: status %d\n%s", res.code, res.body)
	}
	page = f.get("/actions/retry?" + form("account", both, "from", "2026-11-20", "to", "2026-11-22").Encode())
	if page.code != http.StatusOK || !strings.Contains(page.body,
		"Left out members: a snapshot dataset is copied for the newest closed day only (2026-11-29), which is outside 2026-11-20..2026-11-22") {
		t.Errorf("retry of an older range: status %d\n%s", page.code, page.body)
	}

	res = f.post("/actions/reexport", form("account", both, "from", "2026-11-28", "to", "2026-11-29"), f.session())
	if res.code != http.StatusOK || !strings.Contains(res.body, "Sent 3 re-export requests") ||
		!strings.Contains(res.body, "Left out members: a snapshot dataset is copied for the newest closed day only: 2026-11-29 alone") {
		t.Errorf("re-export: status %d\n%s", res.code, res.body)
	}
	var got []string
	for _, body := range f.queue.sent() {
		if m, err := jobs.Parse(cat, body); err == nil && m.Manual != nil {
			got = append(got, m.Manual.Dataset+" "+m.Manual.Day)
		}
	}
	slices.Sort(got)
	if want := "events 2026-11-28,events 2026-11-29,members 2026-11-29"; strings.Join(got, ",") != want {
		t.Errorf("sent %v, want %s", got, want)
	}

	// Nothing but the snapshot, in an older range: refused, saying why.
	page = f.get("/actions/reexport?" + form("account", only, "from", "2026-11-20", "to", "2026-11-22").Encode())
	if page.code != http.StatusUnprocessableEntity || !strings.Contains(page.body, "nothing to queue for account "+only+": members: a snapshot dataset is copied for the newest closed day only") {
		t.Errorf("only a snapshot, an older range: status %d\n%s", page.code, page.body)
	}
}
