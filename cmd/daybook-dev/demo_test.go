package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// TestEndToEnd runs a smaller `make demo`: moto with template.yaml deployed,
// the real sweeper and exporter bootstraps under the Lambda Runtime
// Interface Emulator, driven like EventBridge Scheduler and the SQS event
// source mapping; then it checks what was delivered.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	buildBinaries(t, bin)
	// The demo runs as of this instant: its data ends there, and its sweeps
	// are ticks at it, so the sweeper under the emulator closes the days
	// closed at it, not at its own clock, however late in the run it sweeps
	// (TestSweepClosesTheDaysOfItsTick; the run ends well within
	// MaxTickAge, the oldest tick the sweeper takes). A day that closes
	// during the run is not exported, and every expectation below is the
	// days closed at now, at any hour. Whether any closed day is above
	// SLICE_ROWS does not depend on the hour either: TestDemoSlicesAtAnyInstant
	// plans the demo at fixed instants across a day and the DST changes.
	now := time.Now().UTC()
	var out bytes.Buffer
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	o := e2eDemo
	o.Catalog, o.Dir, o.Template, o.BinDir, o.Now, o.Out = datasettest.Example(t), dir, "../../template.yaml", bin, func() time.Time { return now }, &out
	o.WhileUp = e2eTableReader
	// Kept, as docs/development.md's console lines keep it: the kept demo's checks
	// run on it below, then local down stops it.
	o.Keep, o.Self = true, "daybook-dev"
	t.Cleanup(func() {
		_ = newApp(io.Discard, io.Discard).execute(context.Background(), []string{"local", "down", "--dir", dir})
	})
	// Every call of the sweeper and the exporter bootstraps is checked
	// against their policies in the template as the demo deploys it.
	policies := iamcheck.ForStage(t, "demo", map[string]string{"SourceDriver": "sqlite"})
	o.Endpoint = func(fn, moto string) string {
		return iamcheck.Endpoint(t, policies, iamcheck.Route{Function: fn, Upstream: moto})
	}
	res, err := demo(ctx, o)
	t.Log(out.String())
	if err != nil {
		for _, fn := range []string{"SweeperFunction", "ExporterFunction"} {
			if b, _ := os.ReadFile(filepath.Join(dir, "logs", fn+".log")); len(b) > 0 {
				t.Logf("%s log tail:\n%s", fn, b[max(0, len(b)-3000):])
			}
		}
		t.Fatal(err)
	}

	t.Run("every committed partition matches its manifest; nothing for today; delivery manifests exist", func(t *testing.T) {
		if len(res.Problems) > 0 {
			t.Fatalf("problems:\n%s", strings.Join(res.Problems, "\n"))
		}
	})

	t.Run("every closed day of every account and dataset is committed with the source's row count", func(t *testing.T) {
		committed := map[string]bool{}
		for _, r := range res.Reports {
			if r.Committed() {
				committed[r.Target.PartitionPrefix()] = true
			}
		}
		for _, a := range res.Accounts {
			closed := a.WithDefaults(0).ClosedThrough(now)
			prefix, _ := a.Prefix(res.Stage)
			for _, ds := range a.Datasets {
				for _, d := range civil.Range(a.StartDate, closed) {
					if !committed[layout.PartitionPrefix(prefix, ds, d)] {
						t.Errorf("%s %s %s: not committed", a.ID, ds, d)
					}
				}
			}
		}
		rows := 0
		for _, r := range res.Rows {
			if r.State != ledger.StateCompleted {
				t.Errorf("%s: ledger state %s", r.Key, r.State)
				continue
			}
			want := res.Expected[r.AccountID][r.Dataset][r.Day.String()]
			if r.Rows != want {
				t.Errorf("%s: %d rows exported, the source has %d", r.Key, r.Rows, want)
			}
			rows++
		}
		if rows != len(committed) {
			t.Errorf("%d completed ledger rows, %d committed partitions", rows, len(committed))
		}
	})

	t.Run("days above the slice target were exported in slices, through the real functions", func(t *testing.T) {
		// SLICE_ROWS is the events per day, so the busier days of each
		// account are sliced; their row counts were checked above.
		if len(res.Sliced) == 0 {
			t.Fatal("no partition was exported in slices")
		}
		for _, p := range res.Sliced {
			if !strings.Contains(p, string(filepath.Separator)+"events"+string(filepath.Separator)) && !strings.Contains(p, string(filepath.Separator)+"profiles"+string(filepath.Separator)) {
				t.Errorf("%s was sliced: only datasets partitioned on a timestamp are", p)
			}
		}
		t.Logf("%d partitions exported in slices", len(res.Sliced))
	})

	t.Run("one account on each store, each mirrored to its own folder", func(t *testing.T) {
		kinds := map[account.StoreKind]int{}
		for _, a := range res.Accounts {
			kinds[a.Destination.Kind()]++
			prefix, _ := a.Prefix(res.Stage)
			day := a.WithDefaults(0).ClosedThrough(now)
			p := filepath.Join(res.Mirror, mirrorName(a.Destination), prefix, layout.Version, "events", "dt="+day.String(), "_SUCCESS")
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s (%s): %v", a.ID, a.Destination.URI(""), err)
			}
		}
		if kinds[account.StoreS3] == 0 || kinds[account.StoreGCS] != 1 || kinds[account.StoreAzure] != 1 {
			t.Errorf("accounts per store %v", kinds)
		}
		for _, want := range []string{"gs://daybook-exports-demo-4/", "abfss://daybook-exports-demo-5@devstoreaccount1.dfs.core.windows.net/",
			"buckets/gcs-daybook-exports-demo-4/", "buckets/azure-daybook-exports-demo-5/"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the demo does not print %s", want)
			}
		}
	})

	t.Run("the manual re-export raised the generation", func(t *testing.T) {
		if res.Before.Generation != 1 || res.Reexported.Generation != 2 || res.Reexported.State != ledger.StateCompleted {
			t.Errorf("generation %d -> %d (%s), want 1 -> 2 (completed)", res.Before.Generation, res.Reexported.Generation, res.Reexported.State)
		}
	})

	t.Run("the mirror holds the committed partitions", func(t *testing.T) {
		a := res.Accounts[0]
		prefix, _ := a.Prefix(res.Stage)
		day := res.Reexported.Day
		p := filepath.Join(res.Mirror, a.Destination.Bucket, prefix, layout.Version, "events", "dt="+day.String(), "_SUCCESS")
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	})

	t.Run("the first account keeps Iceberg tables holding every committed day; the DuckDB query names the table's current metadata", func(t *testing.T) {
		a := res.Accounts[demoTableAccount]
		if a.Destination.TableFormat != "iceberg" || len(res.Tables) != len(a.Datasets) {
			t.Fatalf("table format %q, %d tables read back for %d datasets", a.Destination.TableFormat, len(res.Tables), len(a.Datasets))
		}
		for _, tb := range res.Tables {
			var want int64
			for d, n := range res.Expected[a.ID][tb.Dataset] {
				if day := civil.MustParse(d); !day.Before(a.StartDate) && !day.After(a.WithDefaults(0).ClosedThrough(now)) {
					want += n
				}
			}
			if tb.Rows != want || tb.Version < 2 {
				t.Errorf("%s table: %d rows read back at metadata v%d, the source has %d", tb.Dataset, tb.Rows, tb.Version, want)
			}
		}
		i := slices.IndexFunc(res.Tables, func(tb demoTable) bool { return tb.Dataset == "events" })
		meta := filepath.Join(res.Mirror, a.Destination.Bucket, filepath.FromSlash(res.Tables[i].MetadataKey()))
		if _, err := os.Stat(meta); err != nil {
			t.Error(err)
		}
		if !strings.Contains(out.String(), "INSTALL iceberg; LOAD iceberg; SELECT ") || !strings.Contains(out.String(), "FROM iceberg_scan('"+meta+"', allow_moved_paths = true)") {
			t.Errorf("no DuckDB query over %s in the output", meta)
		}
		if e2eTableReader != nil && icebirdRead == 0 {
			t.Error("icebird read no rows")
		}
		t.Logf("icebird read %d rows of the events table (0: built with noduckdb, not read)", icebirdRead)
	})

	t.Run("the bucket README's Quick start runs as written on a copy of each account's bucket", func(t *testing.T) {
		if e2eQuickStart == nil {
			t.Fatal("built with noduckdb: the Quick start's DuckDB is the Go binding's, linked through cgo")
		}
		e2eQuickStart(t, res)
	})

	t.Run("the kept demo behaves like a deployment", func(t *testing.T) {
		keptDemo(t, ctx, res, dir, bin)
	})

	t.Run("it ends with the console command on the kept run; after local down the CLI names the command that starts it again", func(t *testing.T) {
		operator := filepath.Join(bin, "daybook")
		if !strings.Contains(out.String(), "      "+operator+" console --env-file "+filepath.Join(dir, "env.json")+"\n") ||
			!strings.Contains(out.String(), "daybook-dev local down --dir "+dir) {
			t.Errorf("no console command at the end:\n%s", out.String())
		}
		var down bytes.Buffer
		if code := newApp(&down, &down).execute(ctx, []string{"local", "down", "--dir", dir}); code != 0 || !strings.Contains(down.String(), "stopped moto_server") {
			t.Errorf("local down --dir %s: exit %d\n%s", dir, code, down.String())
		}
		// The operator CLI takes the console command as printed; the stack
		// is down, and it says how to start this one (it said make local-up).
		msg, err := exec.CommandContext(ctx, operator, "console", "--env-file", filepath.Join(dir, "env.json"), "--listen", "127.0.0.1:0").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 ||
			!strings.Contains(string(msg), "is not running: start it with daybook-dev demo --dir "+dir+" --bin "+bin+" --keep") {
			t.Errorf("%s console --env-file: %v\n%s", operator, err, msg)
		}
	})

	t.Run("no process left running", func(t *testing.T) {
		if len(res.Pids) != 5 { // moto, fake-gcs-server, Azurite, the two runtime emulators
			t.Fatalf("pids %v", res.Pids)
		}
		for _, pid := range res.Pids {
			if alive(pid) { // a child stopped by local down stays a zombie of this process: gone
				t.Errorf("pid %d still running", pid)
			}
		}
	})
}

// e2eTableReader reads the demo's tables with a second reader while moto
// serves them (demoiceberg_test.go), and icebirdRead is how many rows it read.
var (
	e2eTableReader func(context.Context, *motoserver.Server, *demoResult) error
	icebirdRead    int
	// e2eQuickStart runs each account's bucket README Quick start on the
	// mirror (quickstart_test.go; DuckDB through cgo).
	e2eQuickStart func(*testing.T, *demoResult)
)

// e2eDemo is the end-to-end test's demo: smaller than make demo's.
var e2eDemo = demoOptions{Days: 4, EventsPerDay: 60, Seed: 7}

func TestDemoKeepsItsStackForTheConsole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out bytes.Buffer
	o := demoOptions{Dir: dir, BinDir: ".local/bin", Keep: true, Self: ".local/bin/daybook-dev"}
	stores := &demoStores{gcs: &serverproc.Process{Pid: 4243}, azure: &serverproc.Process{Pid: 4244}}
	kept, err := keepOrSay(&out, o, ".local/bin/daybook", &motoserver.Server{URL: "http://127.0.0.1:4566", Pid: 4242}, stores)
	if err != nil || !kept {
		t.Fatalf("kept %v, %v", kept, err)
	}
	for _, want := range []string{"moto_server keeps running at http://127.0.0.1:4566 (pid 4242)",
		".local/bin/daybook console --env-file " + filepath.Join(dir, "env.json"), ".local/bin/daybook-dev local down --dir " + dir} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Without --keep it prints the commands that keep a run for the console.
	var said bytes.Buffer
	o.Keep = false
	if kept, err := keepOrSay(&said, o, ".local/bin/daybook", &motoserver.Server{URL: "http://127.0.0.1:4566", Pid: 4242}, stores); err != nil || kept ||
		!strings.Contains(said.String(), ".local/bin/daybook-dev demo --dir "+dir+" --bin .local/bin --keep && .local/bin/daybook console --env-file "+filepath.Join(dir, "env.json")+"\n") {
		t.Errorf("without --keep: kept %v, %v\n%s", kept, err, said.String())
	}
	// local down finds it where local up leaves its own.
	if pid, err := readPid(localDir(dir)); err != nil || pid != 4242 {
		t.Errorf("pid file: %d, %v", pid, err)
	}
	if b, err := os.ReadFile(localDir(dir).urlFile()); err != nil || strings.TrimSpace(string(b)) != "http://127.0.0.1:4566" {
		t.Errorf("url file: %q, %v", b, err)
	}
	for i, pid := range []string{"4243", "4244"} {
		if b, err := os.ReadFile(localDir(dir).storePidFiles()[i]); err != nil || strings.TrimSpace(string(b)) != pid {
			t.Errorf("store emulator pid file: %q, %v", b, err)
		}
	}
	// Nothing is running under that pid: a new run has nothing to stop.
	if err := stopKept(&out, t.TempDir()); err != nil {
		t.Errorf("stopKept with nothing kept: %v", err)
	}
}
