package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/partition"
)

// statusFixture: a healthy account with three completed days, and a
// troubled one with, for 2026-11-25..29: stopped, failed, claimed (its job
// in the queue), running, queued (the ledger's pending).
type statusFixture struct {
	healthy, troubled string
}

func newStatusFixture(t *testing.T, s stack) statusFixture {
	t.Helper()
	ctx := context.Background()
	l := s.ledgerAt(t, testNow.Add(-time.Hour), 6)
	once := s.ledgerAt(t, testNow.Add(-time.Hour), 1) // stops after one failure
	f := statusFixture{healthy: s.newAccount(t, nil).ID, troubled: s.newAccount(t, nil).ID}
	day := civil.MustParse
	if _, err := l.Schedule().Materialize(ctx, f.healthy, "events", day("2026-11-27"), day("2026-11-29")); err != nil {
		t.Fatal(err)
	}
	for _, d := range civil.Range(day("2026-11-27"), day("2026-11-29")) {
		k := partition.Key{AccountID: f.healthy, Dataset: "events", Day: d}
		c, err := l.Partitions().Claim(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Complete(ctx, k, c.Token, ledger.Result{Rows: 10, Files: 1, Bytes: 100}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Schedule().Materialize(ctx, f.troubled, "events", day("2026-11-25"), day("2026-11-29")); err != nil {
		t.Fatal(err)
	}
	key := func(d string) partition.Key {
		return partition.Key{AccountID: f.troubled, Dataset: "events", Day: day(d)}
	}
	run := func(l *ledger.Ledger, d string, fail bool) {
		c, err := l.Partitions().Claim(ctx, key(d), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, key(d), c.Token); err != nil {
			t.Fatal(err)
		}
		if fail {
			if _, err := l.Partitions().Fail(ctx, key(d), c.Token, errors.New("source unreachable")); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(once, "2026-11-25", true)
	run(l, "2026-11-26", true)
	if _, err := l.Partitions().Claim(ctx, key("2026-11-27"), ""); err != nil {
		t.Fatal(err)
	}
	run(l, "2026-11-28", false)
	// What the next sweep does: the fleet view reads the refreshed summaries.
	for _, id := range []string{f.healthy, f.troubled} {
		if _, err := l.Fleet().Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestStatusFleetIsWorstFirst(t *testing.T) {
	s := deployed(t)
	f := newStatusFixture(t, s)
	a, _, _ := testApp(t)

	// The table holds other tests' accounts: one page of them all.
	r := s.run(t, a, "status", "--limit", "500", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var page fleetPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatal(err)
	}
	lines := page.Accounts
	at := func(id string) int { return slices.IndexFunc(lines, func(l fleetLine) bool { return l.Account == id }) }
	h, tr := at(f.healthy), at(f.troubled)
	if h < 0 || tr < 0 || tr > h {
		t.Fatalf("troubled account at %d, healthy at %d: want both, troubled first", tr, h)
	}
	want := map[ops.Phase]int{ops.Stopped: 1, ops.Failed: 1, ops.Claimed: 1, ops.Running: 1, ops.Queued: 1}
	for p, n := range want {
		if lines[tr].Counts[p] != n {
			t.Errorf("troubled %s = %d, want %d (%v)", p, lines[tr].Counts[p], n, lines[tr].Counts)
		}
	}
	if lines[tr].OldestDue != "2026-11-25" || lines[tr].LastExport != "" {
		t.Errorf("troubled oldest due %q, last export %q", lines[tr].OldestDue, lines[tr].LastExport)
	}
	if c := lines[h].Counts; c[ops.Completed] != 3 || lines[h].LastExport != "2026-11-29" || lines[h].OldestDue != "" {
		t.Errorf("healthy %+v", lines[h])
	}

	r = s.run(t, a, "status", "--limit", "500")
	if !strings.Contains(r.stdout, "ACCOUNT") || !strings.Contains(r.stdout, "OLDEST DUE") || !strings.Contains(r.stdout, "in-queue: claimed by a sweep, its job in the jobs queue") {
		t.Errorf("fleet table:\n%s", r.stdout)
	}
	// A column per phase, in display order, each explained below the table.
	for _, p := range ops.Phases {
		if !strings.Contains(lineWith(r.stdout, "ACCOUNT"), strings.ToUpper(string(p))) || p != ops.Completed && !strings.Contains(r.stdout, string(p)+": ") {
			t.Errorf("fleet table lacks the column or the note of %s:\n%s", p, r.stdout)
		}
	}
	row := lineWith(r.stdout, f.troubled)
	if fields := strings.Fields(row); len(fields) < 12 || !slices.Equal(fields[len(fields)-9:len(fields)-1], []string{"0", "1", "1", "0", "1", "1", "1", "2026-11-25"}) {
		t.Errorf("troubled row %q: want completed 0, running 1, in-queue 1, requested 0, due 1, failed 1, stopped 1, oldest due 2026-11-25", row)
	}

	// --state keeps the accounts with partitions in those states.
	r = s.run(t, a, "status", "--state", "stopped", "--limit", "500", "-o", "json")
	page = fleetPage{}
	json.Unmarshal([]byte(r.stdout), &page)
	lines = page.Accounts
	if at(f.troubled) < 0 || at(f.healthy) >= 0 {
		t.Errorf("--state stopped: troubled at %d, healthy at %d", at(f.troubled), at(f.healthy))
	}
	// and counts only the partitions in those states.
	r = s.run(t, a, "status", "--state", "failed,stopped", "--limit", "500")
	if fields := strings.Fields(lineWith(r.stdout, f.troubled)); len(fields) < 12 || !slices.Equal(fields[len(fields)-9:len(fields)-2], []string{"0", "0", "0", "0", "0", "1", "1"}) {
		t.Errorf("--state failed,stopped: troubled row %q, want only failed 1 and stopped 1 counted", lineWith(r.stdout, f.troubled))
	}
	// --from/--to count the window only.
	r = s.run(t, a, "status", "--from", "2026-11-28", "--to", "2026-11-29", "--limit", "500", "-o", "json")
	page = fleetPage{}
	json.Unmarshal([]byte(r.stdout), &page)
	lines = page.Accounts
	if i := at(f.healthy); i < 0 || lines[i].Counts[ops.Completed] != 2 {
		t.Errorf("window of two days: %+v", lines)
	}
}

// TestStatusFleetPages: --limit pages the fleet view, each page printing
// the command for the next; --search finds an account by id; a made-up
// token is refused naming the flag.
func TestStatusFleetPages(t *testing.T) {
	s := deployed(t)
	f := newStatusFixture(t, s)
	a, _, _ := testApp(t)

	seen := map[string]int{}
	args := []string{"status", "--limit", "1"}
	for pages := 0; ; pages++ {
		if pages > 500 {
			t.Fatal("more than 500 pages of one account")
		}
		r := s.run(t, a, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
		n := 0
		for _, id := range []string{f.healthy, f.troubled} {
			if lineWith(r.stdout, id) != "" {
				seen[id]++
				n++
			}
		}
		next := lineWith(r.stdout, "More accounts: daybook status ")
		if next == "" {
			break
		}
		fields := strings.Fields(strings.TrimPrefix(next, "More accounts: daybook "))
		if !slices.Equal(fields[:3], []string{"status", "--limit", "1"}) || fields[3] != "--page-token" {
			t.Fatalf("next page line %q", next)
		}
		args = fields
	}
	if seen[f.healthy] != 1 || seen[f.troubled] != 1 {
		t.Errorf("pages of one showed the fixture's accounts %v times, want once each", seen)
	}

	r := s.run(t, a, "status", "--search", f.healthy, "-o", "json")
	var page fleetPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Accounts) == 0 || page.Accounts[0].Account != f.healthy {
		t.Errorf("--search %s: %s %v", f.healthy, r.stdout, err)
	}
	r = s.run(t, a, "status", "--page-token", "bogus")
	if r.code == 0 || !strings.Contains(r.stderr, `--page-token "bogus"`) {
		t.Errorf("a made-up token: exit %d\n%s", r.code, r.stderr)
	}
	r = s.run(t, a, "status", "--limit", "0")
	if r.code != 2 || !strings.Contains(r.stderr, "--limit 0") {
		t.Errorf("--limit 0: exit %d\n%s", r.code, r.stderr)
	}
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func TestStatusOfAnAccount(t *testing.T) {
	s := deployed(t)
	f := newStatusFixture(t, s)
	a, _, _ := testApp(t)

	r := s.run(t, a, "status", "--account", f.troubled, "--from", "2026-11-23")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"days 2026-11-23..2026-11-29 (7)",
		"\n        Nov 2026\n        23\n",
		"events    Xx~>.  running 1, in-queue 1, due 1, failed 1, stopped 1", // two days with no row, then the five
		"~ in the jobs queue, claimed by a sweep, waiting for an exporter",
		// One word (due) for the ledger's queued and pending, and a blank cell
		// explained, as the console's legend says them.
		". due, waiting for a sweep  ",
		"(blank) no ledger row: before the start date, or not scheduled by a sweep yet",
		// Failed and stopped partitions, grouped by reason code, with the fix
		// and the raw error once.
		"FAILED internal: unexpected error inside daybook (2 partitions, 1 stopped retrying)\n  events 2026-11-25, events 2026-11-26\n  fix: read the raw error",
		"  error: source unreachable\n",
		"events 2026-11-27  claimed at 2026-11-30T11:00:00Z, its job waits in the queue (lease until 2026-11-30T11:20:00Z, expired: the next sweep claims it again)",
		"events 2026-11-28  running attempt 1 since 2026-11-30T11:00:00Z (lease until 2026-11-30T11:20:00Z, expired: the next sweep claims it again)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("colours without a terminal:\n%q", r.stdout)
	}

	// Colours on a terminal, unless NO_COLOR.
	a.terminal = func(io.Writer) bool { return true }
	if r := s.run(t, a, "status", "--account", f.troubled); !strings.Contains(r.stdout, "\x1b[36m~\x1b[0m") {
		t.Errorf("no colours on a terminal:\n%q", r.stdout)
	}
	a.getenv = func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }
	if r := s.run(t, a, "status", "--account", f.troubled); strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("colours with NO_COLOR:\n%q", r.stdout)
	}
	a.terminal = func(io.Writer) bool { return false }

	// Days before the window are summed up, not hidden.
	r = s.run(t, a, "status", "--account", f.troubled, "--days", "2")
	if !strings.Contains(r.stdout, "events before 2026-11-28: in-queue 1, failed 1, stopped 1 (show them with --from)") {
		t.Errorf("--days 2:\n%s", r.stdout)
	}
	// --state narrows the map and lists every matching day.
	r = s.run(t, a, "status", "--account", f.troubled, "--state", "failed,stopped", "--from", "2026-11-25")
	if !strings.Contains(r.stdout, "events  Xx\n") && !strings.Contains(r.stdout, "events  Xx  ") {
		t.Errorf("--state failed,stopped:\n%s", r.stdout)
	}
	// JSON has every day with its details.
	r = s.run(t, a, "status", "--account", f.troubled, "-o", "json")
	var res accountStatusOut
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Datasets) != 1 {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	var got []string
	for _, d := range res.Datasets[0].Days {
		got = append(got, d.Day[8:]+":"+string(d.State))
	}
	if want := "25:stopped 26:failed 27:in-queue 28:running 29:due"; strings.Join(got, " ") != want {
		t.Errorf("days %v, want %s", got, want)
	}
	if d := res.Datasets[0].Days[0]; d.Error != "source unreachable" || d.Attempts != 1 {
		t.Errorf("stopped day %+v", d)
	}
	// A dataset the account does not export is named.
	r = s.run(t, a, "status", "--account", f.troubled, "--dataset", "profiles")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "its datasets: events") {
		t.Errorf("--dataset profiles: exit %d\n%s", r.code, r.stderr)
	}
}

func TestHistoryCommand(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	acct := s.newAccount(t, nil)
	day := civil.MustParse("2026-11-20")
	key := partition.Key{AccountID: acct.ID, Dataset: "events", Day: day}
	t0 := time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)
	now := t0
	l, err := ledger.New(ledgerClient(s), ledger.Config{Catalog: datasettest.Example(t), Table: s.outputs["LedgerTableName"], Lease: 20 * time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Schedule().Materialize(ctx, acct.ID, "events", day, day); err != nil {
		t.Fatal(err)
	}
	attempt := func(fail bool) {
		c, err := l.Partitions().Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
			t.Fatal(err)
		}
		now = now.Add(42 * time.Second)
		if fail {
			_, err = l.Partitions().Fail(ctx, key, c.Token, errors.New("permission denied on s3:PutObject"))
		} else {
			_, err = l.Partitions().Complete(ctx, key, c.Token, ledger.Result{Rows: 2860, Bytes: 120000, Files: 1, ManifestKey: "m", Duration: 42 * time.Second})
		}
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(7 * time.Hour)
	}
	attempt(true)
	attempt(false)

	a, _, _ := testApp(t)
	r := s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-20")
	for _, want := range []string{
		acct.ID + " events 2026-11-20: completed, generation 1, 2860 rows in 1 file (117.2 KiB)",
		"STARTED", "2026-11-21T02:00:00Z  1", "failed", "permission denied on s3:PutObject",
		"2026-11-21T09:00:42Z  2", "42s", "completed  1           2860",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("history lacks %q:\n%s", want, r.stdout)
		}
	}
	r = s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-20", "-o", "json")
	var h historyOut
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || len(h.Attempts) != 2 || h.Attempts[0].Outcome != "failed" ||
		h.Attempts[1].Outcome != "completed" || h.Attempts[1].Rows != 2860 || h.Attempts[1].DurationMS != 42000 || h.Current == nil {
		t.Errorf("json history %+v (%v)\n%s", h, err, r.stdout)
	}
	r = s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-01")
	if r.code != 0 || !strings.Contains(r.stdout, "no ledger row") || !strings.Contains(r.stdout, "no attempts recorded") {
		t.Errorf("a day without a row: exit %d\n%s", r.code, r.stdout)
	}
}

// TestHistoryShowsSlices: a day running in slices shows each slice's state
// in `daybook history`, read from the ledger's slice items.
func TestHistoryShowsSlices(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	acct := s.newAccount(t, nil)
	day := civil.MustParse("2026-11-20")
	key := partition.Key{AccountID: acct.ID, Dataset: "events", Day: day}
	now := time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)
	l, err := ledger.New(ledgerClient(s), ledger.Config{Catalog: datasettest.Example(t), Table: s.outputs["LedgerTableName"], Lease: 20 * time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Schedule().Materialize(ctx, acct.ID, "events", day, day); err != nil {
		t.Fatal(err)
	}
	c, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err = l.Partitions().Start(ctx, key, c.Token); err != nil {
		t.Fatal(err)
	}
	if err := l.Slices().PlanSlices(ctx, ledger.SlicePlan{Key: key, Token: c.Token, Generation: 1, Slices: 3, RunID: "run_x", StartedAt: now, ExpectedRows: 450_000_000}); err != nil {
		t.Fatal(err)
	}
	s0, err := l.Slices().StartSlice(ctx, key, c.Token, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Slices().CompleteSlice(ctx, key, c.Token, 0, s0.RunToken, ledger.SliceResult{Rows: 150_000_000, Bytes: 5 << 30, Files: "{}"}); err != nil {
		t.Fatal(err)
	}
	s1, err := l.Slices().StartSlice(ctx, key, c.Token, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Slices().FailSlice(ctx, key, c.Token, 1, s1.RunToken, errors.New("source unavailable: connection reset")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Slices().StartSlice(ctx, key, c.Token, 2); err != nil {
		t.Fatal(err)
	}

	a, _, _ := testApp(t)
	r := s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-20")
	for _, want := range []string{
		"in slices since 2026-11-21T02:00:00Z: 1 of 3 in (150000000 rows), generation 1, 450000000 rows expected",
		"SLICE", "completed", "5.0 GiB", "failed", "source unavailable: connection reset", "running", "2026-11-21T02:20:00Z",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("history lacks %q:\n%s", want, r.stdout)
		}
	}
	r = s.run(t, a, "history", "--account", acct.ID, "--dataset", "events", "--day", "2026-11-20", "-o", "json")
	var h historyOut
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || h.Slices == nil || len(h.Slices.Slices) != 3 || h.Slices.Completed != 1 ||
		h.Slices.Slices[1].State != "failed" || h.Slices.Slices[2].State != "running" {
		t.Errorf("json history slices %+v (%v)\n%s", h.Slices, err, r.stdout)
	}
}

// TestFleetRebuild: an account whose summary was never built (as after an
// upgrade) is missing from the fleet view until daybook fleet rebuild
// builds it from its rows; --account names one, and an unknown one is
// refused naming the flag. The account was also saved before guard items
// existed (its guard items and the record's list of them removed): the
// rebuild writes them, as a save would, once (a second rebuild writes
// nothing), and the guard of its prefix then names it as owner.
func TestFleetRebuild(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	l := s.ledgerAt(t, testNow, 3)
	acct := s.newAccount(t, nil)
	id := acct.ID
	table := aws.String(s.outputs["LedgerTableName"])
	guards, err := acct.Guards("clitest")
	if err != nil {
		t.Fatal(err)
	}
	guardItem := func(key string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "GUARDS"}, "sk": &types.AttributeValueMemberS{Value: key}}
	}
	for _, g := range guards {
		if _, err := ledgerClient(s).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: guardItem(g.Key)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ledgerClient(s).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, UpdateExpression: aws.String("REMOVE guards"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ACCOUNTS"}, "sk": &types.AttributeValueMemberS{Value: id}}}); err != nil {
		t.Fatal(err)
	}
	owner := func(key string) string {
		t.Helper()
		out, err := ledgerClient(s).GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: guardItem(key), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := out.Item["owner"].(*types.AttributeValueMemberS); ok {
			return o.Value
		}
		return ""
	}
	if _, err := l.Schedule().Materialize(ctx, id, "events", civil.MustParse("2026-11-27"), civil.MustParse("2026-11-29")); err != nil {
		t.Fatal(err)
	}
	// As after an upgrade: account put built the summary (its name, its
	// place in the index) and the rows marked it stale; none of it exists yet.
	for _, sk := range []string{"SUMMARY", "NAME", "STALE"} {
		if _, err := ledgerClient(s).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.outputs["LedgerTableName"]),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "FS#" + id}, "sk": &types.AttributeValueMemberS{Value: sk}}}); err != nil {
			t.Fatal(err)
		}
	}
	a, _, _ := testApp(t)
	listed := func() (fleetLine, bool) {
		t.Helper()
		r := s.run(t, a, "status", "--limit", "500", "-o", "json")
		var page fleetPage
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		i := slices.IndexFunc(page.Accounts, func(l fleetLine) bool { return l.Account == id })
		if i < 0 {
			return fleetLine{}, false
		}
		return page.Accounts[i], true
	}
	if _, ok := listed(); ok {
		t.Fatal("an account without a summary is in the fleet view: the test does not start as an upgrade does")
	}
	r := s.run(t, a, "fleet", "rebuild", "--account", id)
	if r.code != 0 || !strings.Contains(r.stdout, "1 of 1 account summaries rebuilt; 0 late-data checks moved to their shard; 1 accounts given their isolation guards") {
		t.Fatalf("fleet rebuild --account: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, g := range guards {
		if got := owner(g.Key); g.Hold == account.GuardOwn && got != id {
			t.Errorf("guard %s (%s) is owned by %q, want %s", g.Key, g.Desc, got, id)
		}
	}
	if r := s.run(t, a, "fleet", "rebuild", "--account", id); r.code != 0 || !strings.Contains(r.stdout, "; 0 accounts given their isolation guards") {
		t.Errorf("a second fleet rebuild --account: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if l, ok := listed(); !ok || l.Counts[ops.Queued] != 3 || l.OldestDue != "2026-11-27" {
		t.Errorf("after the rebuild: %+v (listed %v), want 3 queued from 2026-11-27", l, ok)
	}
	r = s.run(t, a, "fleet", "rebuild")
	if r.code != 0 || !strings.Contains(r.stdout, " account summaries rebuilt") {
		t.Errorf("fleet rebuild: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = s.run(t, a, "fleet", "rebuild", "--account", "acct_nosuchaccount0000")
	if r.code != 2 || !strings.Contains(r.stderr, "--account acct_nosuchaccount0000") {
		t.Errorf("an unknown account: exit %d\n%s", r.code, r.stderr)
	}
}
