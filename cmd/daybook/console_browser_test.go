package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/ops"
)

// screenshotDir is where the browser test leaves a screenshot of each page
// (.local/ is git-ignored).
const screenshotDir = "../../.local/console-screenshots"

// chromium finds the browser the console's browser test drives. Without it
// the test fails: `make tools` installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is missing: the console's browser test drives headless Chromium; install it with `make tools` " +
		"(as root it runs: apt-get update && apt-get install -y chromium)")
	return ""
}

// browser starts headless Chromium with a fresh profile and no network
// but the console's.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	alloc, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	)
	t.Cleanup(cancel)
	bctx, bcancel := chromedp.NewContext(alloc)
	t.Cleanup(bcancel)
	return bctx
}

// startConsole runs `daybook console` on a free port and returns its URL;
// it stops when the test ends.
func startConsole(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var stderr strings.Builder
	a := newApp(pw, &stderr)
	done := make(chan int, 1)
	go func() {
		done <- a.execute(ctx, append([]string{"console", "--listen", "127.0.0.1:0"}, args...))
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("daybook console: exit %d\n%s", code, stderr.String())
		}
	})
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("daybook console printed nothing:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, pr) // the shutdown line
	m := regexp.MustCompile(`daybook console on (http://\S+/) `).FindStringSubmatch(lines.Text())
	if m == nil {
		t.Fatalf("daybook console said %q", lines.Text())
	}
	return strings.TrimSuffix(m[1], "/")
}

// shot writes a screenshot of the whole page to screenshotDir/name.png.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 is a PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// TestConsoleInABrowser drives the console in headless Chromium against a
// local stack after a small export: the heatmap shows the exported days
// completed, and a re-export clicked through its confirmation raises the
// day's generation once the exporter has run.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bctx := browser(t, ctx)
	l, _ := startLocal(t, ctx, "consoletest")
	drained := l.dev("local", "drain", "--sweep", "--dir", l.dir)

	var st ops.AccountDays
	if err := json.Unmarshal([]byte(l.cli("status", "--account", localAccountID, "--dataset", "events", "--env-file", l.env, "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, d := range st.Datasets[0].Days {
		if d.State == ops.Completed && d.Generation == 1 {
			exported = append(exported, d.Day)
		}
	}
	if len(exported) < 3 {
		t.Fatalf("the local drain exported %d days of events: %+v", len(exported), st.Datasets[0].Days)
	}
	day := exported[len(exported)-2]
	base := startConsole(t, ctx, "--env-file", l.env)

	// The fleet: the local account, nothing failed.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	if rows := eval[int](t, bctx, `document.querySelectorAll('table.fleet tbody tr').length`); rows != 1 {
		t.Errorf("fleet rows %d, want the local account", rows)
	}
	if h := eval[string](t, bctx, `document.querySelector('.health').textContent`); !strings.Contains(h, "ok") {
		// It failed once under load: say what the ledger and the last
		// sweeps saw, for the next time.
		t.Errorf("the local account's health %q after a clean export\ndrain: %s\nfleet: %s\nthe sweeper's log ends:\n%s", h, drained,
			l.cliOutput("fleet", "--env-file", l.env), logTail(t, filepath.Join(l.dir, "SweeperFunction.log"), 40))
	}
	// The last export's two dates say which is which (they were unlabelled).
	if le := eval[string](t, bctx, `document.querySelector('td.last-export').innerText`); !regexp.MustCompile(`^day \d{4}-\d{2}-\d{2}\nexported \S`).MatchString(le) {
		t.Errorf("the fleet's last export reads %q", le)
	}
	shot(t, bctx, "fleet")

	// The account: every exported day a completed cell.
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(`a[href="/accounts/`+localAccountID+`"]`))); err != nil {
		t.Fatal(err)
	}
	completed := eval[[]string](t, bctx, `Array.from(document.querySelectorAll('[aria-label="events, one cell a day"] a.hm-cell.p-completed')).map(a => a.getAttribute('href').split('/').pop())`)
	if strings.Join(completed, " ") != strings.Join(exported, " ") {
		t.Errorf("completed cells %v, want the exported days %v", completed, exported)
	}
	title := eval[string](t, bctx, fmt.Sprintf(`document.querySelector('a.hm-cell[href$="/events/%s"]').title`, day))
	if !strings.Contains(title, "events "+day+": completed · generation 1 · ") || !strings.Contains(title, "rows") {
		t.Errorf("the cell's title %q", title)
	}
	// The days as the browser holds and shows them: YYYY-MM-DD, the
	// window from the account's first day; the re-export form's default is
	// every dataset.
	inputs := eval[[]string](t, bctx, `Array.from(document.querySelectorAll('input[name=from], input[name=to]')).map(i => i.type + ' ' + i.value)`)
	for _, in := range inputs {
		if !regexp.MustCompile(`^text \d{4}-\d{2}-\d{2}$`).MatchString(in) {
			t.Errorf("a day input %q: want a text input holding YYYY-MM-DD", in)
		}
	}
	if len(inputs) == 0 || inputs[0] > "text "+exported[0] {
		t.Errorf("day inputs %v: the default window does not reach the first exported day %s", inputs, exported[0])
	}
	// A completed day of 0 rows is drawn unlike an in-queue day: hollow, not
	// hatched (both were hatched, in green and in teal).
	looks := func(sel string) string {
		return eval[string](t, bctx, `(s => s.backgroundImage + ' | ' + s.boxShadow)(getComputedStyle(document.querySelector('`+sel+`')))`)
	}
	noRows, claimed := looks(`.legend .hm-cell.p-completed.no-rows`), looks(`.legend .hm-cell.p-in-queue`)
	if strings.Contains(noRows, "gradient") || !strings.Contains(noRows, "inset") || !strings.Contains(claimed, "repeating-linear-gradient") {
		t.Errorf("a 0-row day looks like %q, an in-queue one like %q: want an outline and a hatched bar", noRows, claimed)
	}
	// A short range's month labels do not run into each other.
	if err := chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/accounts/%s?from=2026-11-30&to=2026-12-06", base, localAccountID))); err != nil {
		t.Fatal(err)
	}
	overlap := eval[string](t, bctx, `(() => { const r = Array.from(document.querySelectorAll('.hm-month')).map(m => m.getBoundingClientRect());
		for (let i = 1; i < r.length; i++) if (r[i-1].right > r[i].left) return r[i-1].right + ' > ' + r[i].left; return ''; })()`)
	if n := eval[int](t, bctx, `document.querySelectorAll('.hm-month').length`); n != 2 || overlap != "" {
		t.Errorf("%d month labels on a week across a month's end, overlapping: %q", n, overlap)
	}
	if err := chromedp.Do(bctx, chromedp.NavigateBack()); err != nil {
		t.Fatal(err)
	}
	if v := eval[string](t, bctx, `(document.querySelector('form[action="/actions/reexport"] select[name=dataset]') || {value: 'none'}).value`); v != "" {
		t.Errorf("the re-export form's dataset %q, want every dataset (\"\")", v)
	}
	shot(t, bctx, "account")

	// The keyboard: the heatmap is one tab stop, and the arrow keys move
	// between days (the script), each with a visible focus.
	focused := func() string {
		return eval[string](t, bctx, `document.activeElement.getAttribute('href') || document.activeElement.tagName`)
	}
	if err := chromedp.Do(bctx, chromedp.Focus(chromedp.CSS(fmt.Sprintf(`a.hm-cell[href$="/events/%s"]`, day))), chromedp.KeyEvent(kb.ArrowLeft)); err != nil {
		t.Fatal(err)
	}
	if got, want := focused(), exported[len(exported)-3]; !strings.HasSuffix(got, "/events/"+want) {
		t.Errorf("ArrowLeft from %s focused %s, want %s", day, got, want)
	}
	if err := chromedp.Do(bctx, chromedp.KeyEvent(kb.ArrowDown)); err != nil {
		t.Fatal(err)
	}
	if got := focused(); !strings.HasSuffix(got, "/profiles/"+exported[len(exported)-3]) {
		t.Errorf("ArrowDown focused %s, want the profiles cell of the same day", got)
	}
	if o := eval[string](t, bctx, `getComputedStyle(document.activeElement).outlineStyle`); o == "none" {
		t.Error("the focused cell has no visible outline")
	}

	// The partition: one click on its cell.
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.hm-cell[href$="/events/%s"]`, day)))); err != nil {
		t.Fatal(err)
	}
	body := eval[string](t, bctx, `document.querySelector('main').innerText`)
	for _, want := range []string{"completed, generation 1", "_SUCCESS names generation 1", "/v1/events/dt=" + day + "/_manifest.json", "part-00000.parquet", "The day is"} {
		if !strings.Contains(body, want) {
			t.Errorf("partition page lacks %q:\n%s", want, body)
		}
	}
	shot(t, bctx, "partition")

	// Re-export it: the confirmation page, then its button.
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(`a[href^="/actions/reexport?"]`))); err != nil {
		t.Fatal(err)
	}
	if h := eval[string](t, bctx, `document.querySelector('h1').innerText`); !strings.HasPrefix(h, "Re-export events of Local demo account, "+day+" (1 day)?") {
		t.Errorf("confirmation heading %q", h)
	}
	shot(t, bctx, "confirm")
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(`form[method="post"] button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
	if h := eval[string](t, bctx, `document.querySelector('h1').innerText`); h != "Sent 1 re-export request for events of "+localAccountID {
		t.Errorf("result heading %q", h)
	}
	// A local stack has no event source: the page names what runs the queue.
	if body := eval[string](t, bctx, `document.querySelector('main').innerText`); !strings.Contains(body, "daybook-dev local drain --dir "+l.dir+" --bin .local/bin") {
		t.Errorf("the done page does not say what runs the queue:\n%s", body)
	}
	shot(t, bctx, "done")

	// The exporter takes the request; the generation goes up, once: SQS
	// sends a message at least once, and a request's message sent twice is
	// served once (its request id).
	drained = l.dev("local", "drain", "--dir", l.dir)
	var after ops.AccountDays
	if err := json.Unmarshal([]byte(l.cli("status", "--account", localAccountID, "--dataset", "events", "--env-file", l.env, "-o", "json")), &after); err != nil {
		t.Fatal(err)
	}
	gen := 0
	for _, d := range after.Datasets[0].Days {
		if d.Day == day && d.State == ops.Completed {
			gen = int(d.Generation)
		}
	}
	if gen != 2 {
		t.Fatalf("after the re-export the day is at generation %d, want 2; the drain: %s", gen, drained)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/accounts/%s/partitions/events/%s", base, localAccountID, day))); err != nil {
		t.Fatal(err)
	}
	body = eval[string](t, bctx, `document.querySelector('main').innerText`)
	for _, want := range []string{fmt.Sprintf("completed, generation %d", gen), fmt.Sprintf("_SUCCESS names generation %d", gen), "manual"} {
		if !strings.Contains(body, want) {
			t.Errorf("after the re-export the partition page lacks %q:\n%s", want, body)
		}
	}
	// One attempt per generation: the first export and the re-export.
	if n := eval[int](t, bctx, `document.querySelectorAll('table.attempts tbody tr').length`); n != gen {
		t.Errorf("%d attempts listed, want the first export and the re-export's (generation %d); the drain: %s", n, gen, drained)
	}
	shot(t, bctx, "partition-reexported")
	if n := eval[int](t, bctx, `Array.from(document.querySelectorAll('table.attempts td.requested-by')).filter(td => td.innerText.startsWith('arn:')).length`); n != gen-1 {
		t.Errorf("%d attempts name who asked, want the re-export's %d", n, gen-1)
	}

	// A bad bucket: an account whose bucket is deleted after it was
	// registered (account put and account enable test the destination, so
	// neither takes a missing bucket), three days made due again and tried. The
	// account page shows one failure group, destination_missing, with its
	// fix; the raw error is behind a toggle.
	badFile := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badFile, []byte(`{"name": "Bad bucket", "enabled": true, "start_date": "`+exported[0]+`", "datasets": ["events"],
		"destination": {"bucket": "daybook-exports-deleted-bucket"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var bad struct {
		ID string `json:"id"`
	}
	vars, err := samstack.ReadEnvFile(l.env)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := motoserver.ConfigFor(ctx, vars["ExporterFunction"]["AWS_ENDPOINT_URL"])
	if err != nil {
		t.Fatal(err)
	}
	s3c := awsclient.NewS3(cfg)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("daybook-exports-deleted-bucket")}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(l.cli("account", "put", "--file", badFile, "--env-file", l.env)), &bad); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("daybook-exports-deleted-bucket")}); err != nil {
		t.Fatal(err)
	}
	l.cli("retry", "--account", bad.ID, "--from", exported[0], "--to", exported[2], "--env-file", l.env)
	// The drain exits 1: its messages failed.
	drain := exec.CommandContext(ctx, filepath.Join(l.dir, "bin", "daybook-dev"), "local", "drain", "--sweep", "--dir", l.dir)
	if out, err := drain.CombinedOutput(); err == nil {
		t.Errorf("drain of the bad bucket's days succeeded:\n%s", out)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/accounts/"+bad.ID)); err != nil {
		t.Fatal(err)
	}
	groups := eval[[]string](t, bctx, `Array.from(document.querySelectorAll('.failure-group')).map(g => g.dataset.code + ' | ' + g.querySelector('h3').innerText + ' | ' + g.querySelector('.fix').innerText)`)
	// Every day of the account failed (the sweep materializes the rest from
	// its start date): one group however many.
	if len(groups) != 1 || !strings.HasPrefix(groups[0], "destination_missing | destination_missing: bucket does not exist (") || !strings.Contains(groups[0], "check destination.bucket") {
		t.Errorf("failure groups %q, want one destination_missing group", groups)
	}
	if open := eval[bool](t, bctx, `document.querySelector('.failure-group details').open`); open {
		t.Error("the raw error is shown without its toggle")
	}
	if p := os.Getenv("DAYBOOK_FAILURES_SCREENSHOT"); p != "" {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot(t, bctx, "failures")
	if out := l.cli("status", "--account", bad.ID, "--env-file", l.env); !strings.Contains(out, "FAILED destination_missing: bucket does not exist (") {
		t.Errorf("status does not show the group:\n%s", out)
	}
	var h ops.PartitionHistory
	if err := json.Unmarshal([]byte(l.cli("history", "--account", localAccountID, "--dataset", "events", "--day", day, "--env-file", l.env, "-o", "json")), &h); err != nil ||
		h.Current == nil || h.Current.Generation != 2 || !strings.HasPrefix(h.Attempts[len(h.Attempts)-1].Reason, "manual") {
		t.Errorf("the ledger after the re-export: %+v (%v)", h, err)
	}

	// `daybook console --read-only`, as the operating guide writes it:
	// the pages say so, and an action is refused, changing nothing.
	ro := startConsole(t, ctx, "--env-file", l.env, "--read-only")
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(ro + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b)
	}
	if code, page := get("/accounts/" + localAccountID); code != http.StatusOK || !strings.Contains(page, `<span class="badge ro"`) || strings.Contains(page, "/actions/") {
		t.Errorf("the read-only console's account page: status %d, read-only badge %v, actions offered %v",
			code, strings.Contains(page, `<span class="badge ro"`), strings.Contains(page, "/actions/"))
	}
	if code, page := get("/actions/reexport?account=" + localAccountID + "&dataset=events&day=" + day); code != http.StatusForbidden || !strings.Contains(page, "This console is read-only") {
		t.Errorf("a re-export on the read-only console: status %d\n%s", code, page)
	}
	var refused ops.PartitionHistory
	if err := json.Unmarshal([]byte(l.cli("history", "--account", localAccountID, "--dataset", "events", "--day", day, "--env-file", l.env, "-o", "json")), &refused); err != nil ||
		refused.Current == nil || refused.Current.Generation != 2 || refused.Current.ReexportRequestedAt != "" {
		t.Errorf("the ledger after the read-only console's refusal: %+v (%v)", refused.Current, err)
	}
}

// logTail is the last n lines of the log at path (or why it cannot be read).
func logTail(t *testing.T, path string, n int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
