package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/demosource"
	"github.com/daybook-dev/daybook/shared/devkit/eventsource"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/runtimeemulator"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/netguard"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/verify"
)

// demoOptions configure one run of the demo (and of the end-to-end test,
// which runs a smaller one).
type demoOptions struct {
	// Catalog is the demo's dataset catalog (the shipped example).
	Catalog      *dataset.Set
	Dir          string // state and output: .demo
	Template     string
	BinDir       string           // holds SweeperFunction/bootstrap, ExporterFunction/bootstrap and the operator CLI daybook
	Now          func() time.Time // read once: the demo runs as of that instant
	Days         int
	EventsPerDay int
	// SliceRows is the exporter's SLICE_ROWS: a day with more rows is
	// exported in slices. Zero means demoSliceRows, so the busiest
	// quarter of the demo's days are.
	SliceRows int64
	Seed      uint64
	Out       io.Writer
	// Keep leaves moto_server running at the end, with its pid in Dir
	// (`local down --dir Dir` stops it), for the operator CLI's `console
	// --env-file Dir/env.json`.
	Keep bool
	// Self is how the summary names this program in the commands it prints;
	// the operator CLI it names is the one in BinDir.
	Self string
	// WhileUp, when set, runs after the verify step while moto_server still
	// serves the buckets (the end-to-end test reads the tables with a
	// second reader there).
	WhileUp func(ctx context.Context, srv *motoserver.Server, res *demoResult) error
	// Endpoint, when set, is the AWS endpoint a function (its logical id)
	// runs with instead of moto's URL: the end-to-end test puts a proxy
	// there that checks every call against the function's policy. The
	// env.json the operator CLI reads keeps moto's.
	Endpoint func(fn, moto string) string
}

// demoResult is what the demo delivered, for the summary and the test.
type demoResult struct {
	Accounts   []account.Account
	Stage      string
	Reports    []*verify.Result
	Problems   []string
	Rows       []ledger.Row
	Reexported ledger.Row
	Before     ledger.Row
	Progress   eventsource.Progress
	Mirror     string
	Expected   map[string]map[string]map[string]int64 // source rows per account, dataset, day
	Pids       []int                                  // every process the demo started
	Sliced     []string                               // partition folders of the mirror exported in slices
	Tables     []demoTable                            // the Iceberg tables of the account that keeps them, read back
}

func (a *app) demoCommand() *cobra.Command {
	o := demoOptions{Dir: ".demo", Template: "template.yaml", BinDir: ".local/bin", Days: demosource.DefaultDays, EventsPerDay: demosource.DefaultEventsPerDay, Seed: 20261129}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole pipeline locally on the embedded demo source; files land in <dir>/buckets",
		Long: `Run the whole pipeline locally: moto with template.yaml deployed, a demo SQLite source with three
accounts, the real sweeper and exporter bootstraps under the Lambda runtime emulator until no work
is due, one manual re-export, every committed partition verified, the buckets mirrored to
<dir>/buckets. Everything it starts is stopped at the end (with --keep, moto_server stays up for
daybook console --env-file <dir>/env.json until daybook-dev local down --dir <dir>); running it
again starts from scratch. Needs the host builds (make build) in --bin: the bootstraps and the
operator CLI daybook, which registers the accounts and sends the re-export.`,
	}
	c.Flags().StringVar(&o.Dir, "dir", o.Dir, "state and output directory")
	c.Flags().StringVar(&o.Template, "template", o.Template, "SAM template to deploy")
	c.Flags().StringVar(&o.BinDir, "bin", o.BinDir, "directory with <Function>/bootstrap host builds (make build)")
	c.Flags().IntVar(&o.Days, "days", o.Days, "days of demo data")
	c.Flags().IntVar(&o.EventsPerDay, "events-per-day", o.EventsPerDay, "events per account and day")
	c.Flags().BoolVar(&o.Keep, "keep", false, "leave moto_server running at the end, for daybook console (stop it with daybook-dev local down --dir <dir>)")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if o.Days < 1 || o.EventsPerDay < 1 {
			return cli.Usagef(c, "--days and --events-per-day must be 1 or more")
		}
		o.Catalog, o.Now, o.Out, o.Self = a.catalog, a.now, a.stdout, selfCommand()
		res, err := demo(c.Context(), o)
		if err != nil {
			return err
		}
		if len(res.Problems) > 0 {
			return fmt.Errorf("demo delivered with %d problems:\n  %s", len(res.Problems), strings.Join(res.Problems, "\n  "))
		}
		return nil
	}
	return c
}

func demo(ctx context.Context, o demoOptions) (*demoResult, error) {
	out := o.Out
	started := time.Now()
	// The demo runs as of one instant, the one it starts at: the source's
	// data ends there, its sweeps are ticks at it (the sweeper closes the
	// days closed at its tick) and its checks expect the days closed at it,
	// so a day that closes while it runs changes none of them.
	now := o.Now()
	clock := func() time.Time { return now }
	step := func(format string, args ...any) { fmt.Fprintf(out, "\n==> "+format+"\n", args...) }
	op, err := operatorIn(o.BinDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	const stage = "demo"
	res := &demoResult{Stage: stage}

	step("local AWS: moto_server on 127.0.0.1, template.yaml deployed through the SAM translator")
	if err := stopKept(out, o.Dir); err != nil {
		return nil, err
	}
	srv, err := motoserver.Start(ctx, filepath.Join(o.Dir, "logs", "moto.log"))
	if err != nil {
		return nil, err
	}
	kept := false
	defer func() {
		if !kept {
			srv.Stop()
		}
	}()
	res.Pids = append(res.Pids, srv.Pid)
	cfg, err := srv.Config(ctx)
	if err != nil {
		return nil, err
	}
	stores, err := startStores(ctx, filepath.Join(o.Dir, "logs"))
	if err != nil {
		return nil, err
	}
	defer func() {
		if !kept {
			stores.stop()
		}
	}()
	res.Pids = append(res.Pids, stores.gcs.Pid, stores.azure.Pid)
	fmt.Fprintf(out, "    Google Cloud Storage: fake-gcs-server at %s; Azure Blob Storage: Azurite at %s\n", stores.gcs.URL, stores.azure.URL)
	st, err := samstack.Up(ctx, cfg, o.Template, stage, map[string]string{"SourceDriver": "sqlite"})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "    %s  table %s  queue %s\n", srv.URL, st.Outputs["LedgerTableName"], st.Outputs["JobsQueueUrl"])

	step("demo source: SQLite with %d days of events, profiles and daily_stats for 5 accounts (3 on S3, 1 on GCS, 1 on Azure)", o.Days)
	src, err := demosource.Generate(ctx, demosource.Options{
		Path: filepath.Join(o.Dir, "source.db"), Now: now, Days: o.Days, EventsPerDay: o.EventsPerDay, Seed: o.Seed, Stage: stage,
		OtherStores: true,
	})
	if err != nil {
		return nil, err
	}
	stores.point(src.Accounts)
	if err := withTable(o.Catalog, &src.Accounts[demoTableAccount]); err != nil {
		return nil, err
	}
	res.Accounts = src.Accounts
	res.Expected = src.Rows
	absDB, err := filepath.Abs(src.Path)
	if err != nil {
		return nil, err
	}
	sliceRows := o.SliceRows
	if sliceRows == 0 {
		sliceRows = demoSliceRows(src.Accounts, src.Rows, now)
	}
	// The same file as local up's, so the operator CLI finds the same
	// deployment in it (dead-letter queues, the direct-bucket pattern).
	self := cmp.Or(o.Self, selfCommand())
	env, err := samstack.FunctionEnv(ctx, cfg, st, Functions, localEnv(srv.URL, cliVars(st, map[string]string{"SOURCE_DSN": "file:" + absDB + "?mode=ro",
		"SLICE_ROWS":  fmt.Sprint(sliceRows),
		envLocalStart: self + " demo --dir " + o.Dir + " --bin " + o.BinDir + " --keep",
		envLocalDrain: self + " local drain --dir " + o.Dir + " --bin " + o.BinDir})))
	if err != nil {
		return nil, err
	}
	named(env)
	envFile := filepath.Join(o.Dir, "env.json")
	if err := samstack.WriteEnvFile(envFile, env); err != nil {
		return nil, err
	}

	step("accounts: buckets created, registered with `daybook account put`")
	s3c := awsclient.NewS3(cfg)
	files, err := src.WriteAccountFiles(filepath.Join(o.Dir, "accounts"))
	if err != nil {
		return nil, err
	}
	for i, a := range src.Accounts {
		if err := stores.create(ctx, s3c, a.Destination); err != nil {
			return nil, err
		}
		if err := op.run(ctx, io.Discard, "account", "put", "--file", files[i], "--env-file", envFile); err != nil {
			return nil, err
		}
		how := "own role"
		if a.Destination.RoleARN != "" {
			how = "assumes " + a.Destination.RoleARN
		}
		if a.Destination.TableFormat != "" {
			how += ", " + a.Destination.TableFormat + " table"
		}
		fmt.Fprintf(out, "    %s  %-22s zone %-17s %-7s start %s  %s (%s)\n", a.ID, a.Name, cmp.Or(a.TimeZone, account.DefaultTimeZone),
			cmp.Or(a.Destination.Format, fileformat.Default), a.StartDate, a.Destination.URI(""), how)
	}

	if o.Endpoint != nil {
		for _, fn := range Functions {
			if env[fn] != nil {
				env[fn]["AWS_ENDPOINT_URL"] = o.Endpoint(fn, srv.URL)
			}
		}
	}

	step("pipeline: schedule -> sweeper -> SQS -> exporter, real bootstraps under the Lambda Runtime Interface Emulator")
	led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{Catalog: o.Catalog, Table: st.Outputs["LedgerTableName"], Lease: time.Hour})
	if err != nil {
		return nil, err
	}
	sweeper, err := startFunction(ctx, o, "SweeperFunction", env)
	if err != nil {
		return nil, err
	}
	defer sweeper.Stop()
	res.Pids = append(res.Pids, sweeper.Pid)
	exporter, err := startFunction(ctx, o, "ExporterFunction", env)
	if err != nil {
		return nil, err
	}
	defer exporter.Stop()
	res.Pids = append(res.Pids, exporter.Pid)
	q := sqs.NewFromConfig(cfg)
	queueURL := st.Outputs["JobsQueueUrl"]
	qa, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &queueURL, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, err
	}
	drv := &eventsource.Driver{
		Catalog: o.Catalog, Sweeper: sweeper, Exporter: exporter, Queue: q, QueueURL: queueURL,
		QueueARN: qa.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], Region: cfg.Region, BatchSize: 1,
	}
	if err := sweepQueue(ctx, q, drv, st.Outputs["SweepQueueUrl"]); err != nil {
		return nil, err
	}
	lastPrint := time.Time{}
	drv.Progress = func(p eventsource.Progress) {
		if time.Since(lastPrint) < 2*time.Second {
			return
		}
		lastPrint = time.Now()
		printProgress(ctx, out, led, src.Accounts, now, p)
	}
	prog, err := drv.Run(ctx, clock, 100)
	if err != nil {
		return nil, err
	}
	res.Progress = prog
	printProgress(ctx, out, led, src.Accounts, now, prog)

	step("manual re-export: an operator sends `daybook reexport` for a past day")
	a0 := src.Accounts[0]
	day := a0.WithDefaults(0).ClosedThrough(now).AddDays(-3)
	key := partition.Key{AccountID: a0.ID, Dataset: "events", Day: day}
	if res.Before, err = led.Partitions().Get(ctx, key); err != nil {
		return nil, err
	}
	if err := op.run(ctx, out, "reexport", "--account", a0.ID, "--dataset", "events", "--day", day.String(), "--env-file", envFile); err != nil {
		return nil, err
	}
	var p eventsource.Progress
	drv.Progress = nil // one message; its outcome is printed below
	if err := drv.Drain(ctx, &p); err != nil {
		return nil, err
	}
	if res.Reexported, err = led.Partitions().Get(ctx, key); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "    %s events %s: generation %d -> %d (%s), %d rows in %d files, manifest %s\n", a0.ID, day,
		res.Before.Generation, res.Reexported.Generation, res.Reexported.State, res.Reexported.Rows, res.Reexported.Files, res.Reexported.ManifestKey)

	step("ledger: `daybook status --account %s`", a0.ID)
	if err := op.run(ctx, out, "status", "--account", a0.ID, "--days", "35", "--env-file", envFile); err != nil {
		return nil, err
	}

	step("verify: every committed partition against its manifest; mirror the buckets to %s", filepath.Join(o.Dir, "buckets"))
	res.Mirror = filepath.Join(o.Dir, "buckets")
	if err := os.RemoveAll(res.Mirror); err != nil {
		return nil, err
	}
	readers := &destination.Clients{Base: cfg, Endpoints: netguard.Policy{AllowLoopback: true}}
	for _, a := range src.Accounts {
		b, err := readers.Open(ctx, a.ID, a.Destination, bucket.Options{})
		if err != nil {
			return nil, err
		}
		if err := mirror(ctx, b, filepath.Join(res.Mirror, mirrorName(a.Destination))); err != nil {
			return nil, err
		}
		reports, problems, err := verifyAccount(ctx, b, a, stage, now)
		if err != nil {
			return nil, err
		}
		res.Reports = append(res.Reports, reports...)
		res.Problems = append(res.Problems, problems...)
		for _, ds := range a.Datasets {
			rows, err := led.Partitions().List(ctx, a.ID, ds, a.StartDate, a.WithDefaults(0).ClosedThrough(now).AddDays(1))
			if err != nil {
				return nil, err
			}
			res.Rows = append(res.Rows, rows...)
		}
	}
	committed := 0
	for _, r := range res.Reports {
		if r.Committed() {
			committed++
		}
	}
	if res.Sliced, err = slicedPartitions(res.Mirror); err != nil {
		return nil, err
	}
	if plan := demoSlicePlan(o.Catalog, src.Accounts, src.Rows, now, sliceRows); len(plan) != len(res.Sliced) {
		res.Problems = append(res.Problems, fmt.Sprintf("%d days hold more than SLICE_ROWS=%d rows, but %d partitions in the buckets were exported in slices", len(plan), sliceRows, len(res.Sliced)))
	}
	fmt.Fprintf(out, "    %d partitions committed and verified (files, sizes, CRC32C, row counts), %d problems; %d days above %d rows exported in slices (part-sNNNN files)\n",
		committed, len(res.Problems), len(res.Sliced), sliceRows)
	tables, problems, err := checkTables(ctx, o.Catalog, s3c, src.Accounts[demoTableAccount], stage, res.Rows)
	if err != nil {
		return nil, err
	}
	res.Tables, res.Problems = tables, append(res.Problems, problems...)
	for _, t := range tables {
		fmt.Fprintf(out, "    Iceberg table s3://%s/%s: metadata v%d, %d days with rows, %d rows read back with iceberg-go, as the ledger's\n",
			t.Bucket, t.Location, t.Version, t.Days, t.Rows)
	}
	for _, p := range res.Problems {
		fmt.Fprintln(out, "    PROBLEM:", p)
	}
	if o.WhileUp != nil {
		if err := o.WhileUp(ctx, srv, res); err != nil {
			return nil, err
		}
	}

	step("summary")
	printSummary(out, res)
	a := src.Accounts[0]
	prefix, _ := a.Prefix(stage)
	glob := filepath.Join(res.Mirror, a.Destination.Bucket, prefix, layout.Version, "events", "*", "*"+fileformat.Parquet.Extension())
	fmt.Fprintf(out, "\nexported files: %s/<bucket>/... for S3, %s/gcs-<bucket>/... and %s/azure-<container>/...   (load SQL beside each partition in _load/)\n", res.Mirror, res.Mirror, res.Mirror)
	fmt.Fprintf(out, "try it with DuckDB:\n  duckdb -c \"SELECT dt, event_type, count(*) AS events, sum(amount) AS revenue FROM read_parquet('%s', hive_partitioning=true) GROUP BY ALL ORDER BY ALL\"\n", glob)
	for _, a := range src.Accounts {
		if a.Destination.Kind() == account.StoreS3 {
			continue
		}
		p, _ := a.Prefix(stage)
		g := filepath.Join(res.Mirror, mirrorName(a.Destination), p, layout.Version, "events", "*", "*"+fileformat.Parquet.Extension())
		fmt.Fprintf(out, "the %s account's events (%s), the same way:\n  duckdb -c \"SELECT dt, event_type, count(*) AS events, sum(amount) AS revenue FROM read_parquet('%s', hive_partitioning=true) GROUP BY ALL ORDER BY ALL\"\n",
			a.Destination.Kind(), a.Destination.URI(p+"/"), g)
	}
	printTableQuery(out, res.Mirror, res.Tables)
	if kept, err = keepOrSay(out, o, op, srv, stores); err != nil {
		return nil, err
	}
	if kept {
		fmt.Fprintf(out, "\ndone in %s; moto_server is still running\n", time.Since(started).Round(time.Second))
	} else {
		fmt.Fprintf(out, "\ndone in %s; every process the demo started is stopped\n", time.Since(started).Round(time.Second))
	}
	return res, nil
}

// slicedPartitions lists the partition folders under dir that hold the
// part files of a day exported in slices.
func slicedPartitions(dir string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p := filepath.Dir(path); !d.IsDir() && strings.HasPrefix(d.Name(), layout.DataPrefix+"s") && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func startFunction(ctx context.Context, o demoOptions, fn string, env map[string]map[string]string) (*runtimeemulator.Function, error) {
	logf, err := os.Create(filepath.Join(o.Dir, "logs", fn+".log"))
	if err != nil {
		return nil, err
	}
	// The file stays open for the child process; it is closed when the demo exits.
	return runtimeemulator.Start(ctx, filepath.Join(o.BinDir, fn, "bootstrap"), runtimeemulator.Options{Name: fn, Env: env[fn], Log: logf, Timeout: 900 * time.Second})
}

func printProgress(ctx context.Context, out io.Writer, led *ledger.Ledger, accts []account.Account, now time.Time, p eventsource.Progress) {
	var total, done, failed int
	var rows, bytes int64
	for _, a := range accts {
		to := a.WithDefaults(0).ClosedThrough(now)
		for _, ds := range a.Datasets {
			list, err := led.Partitions().List(ctx, a.ID, ds, a.StartDate, to)
			if err != nil {
				return
			}
			for _, r := range list {
				total++
				switch r.State {
				case ledger.StateCompleted:
					done++
					rows += r.Rows
					bytes += r.Bytes
				case ledger.StateFailed:
					failed++
				}
			}
		}
	}
	fmt.Fprintf(out, "    sweeps %d  batches %d  partitions %d/%d done  %d failed  rows %d  bytes %s\n",
		p.Sweeps, p.Batches, done, total, failed, rows, ops.HumanBytes(bytes))
}

func printSummary(out io.Writer, res *demoResult) {
	type agg struct {
		days, files   int
		rows, bytes   int64
		states        map[ledger.State]int
		generationMax int64
	}
	byKey := map[string]*agg{}
	var keys []string
	for _, r := range res.Rows {
		k := r.AccountID + "\t" + r.Dataset
		g := byKey[k]
		if g == nil {
			g = &agg{states: map[ledger.State]int{}}
			byKey[k] = g
			keys = append(keys, k)
		}
		g.days++
		g.files += r.Files
		g.rows += r.Rows
		g.bytes += r.Bytes
		g.states[r.State]++
		g.generationMax = max(g.generationMax, r.Generation)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "account\tdataset\tdays\trows\tfiles\tbytes\tstate\t")
	for _, k := range keys {
		g := byKey[k]
		var st []string
		for _, s := range []ledger.State{ledger.StateCompleted, ledger.StateFailed, ledger.StateRunning, ledger.StateQueued, ledger.StatePending} {
			if g.states[s] > 0 {
				st = append(st, fmt.Sprintf("%s %d", s, g.states[s]))
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t\n", k, g.days, g.rows, g.files, ops.HumanBytes(g.bytes), strings.Join(st, ", "))
	}
	tw.Flush()
}

// verifyAccount verifies every partition of every dataset of an account and
// the account-level rules: nothing for today or later, a delivery manifest
// for every exported day.
func verifyAccount(ctx context.Context, b *bucket.Bucket, a account.Account, stage string, now time.Time) ([]*verify.Result, []string, error) {
	prefix, err := a.Prefix(stage)
	if err != nil {
		return nil, nil, err
	}
	closed := a.WithDefaults(0).ClosedThrough(now)
	var reports []*verify.Result
	var problems []string
	exportedDays := map[string]bool{}
	for _, ds := range a.Datasets {
		t := verify.Target{Bucket: a.Destination.Bucket, Prefix: prefix, Dataset: ds}
		days, strays, err := verify.Days(ctx, b, t)
		if err != nil {
			return nil, nil, err
		}
		for _, pp := range strays {
			problems = append(problems, fmt.Sprintf("%s: partition folder is not dt=YYYY-MM-DD", b.URI(pp)))
		}
		for _, day := range days {
			t.Day = day
			r, err := verify.Check(ctx, b, t, verify.Options{Download: true})
			if err != nil {
				return nil, nil, err
			}
			reports = append(reports, r)
			for _, p := range r.Problems() {
				problems = append(problems, fmt.Sprintf("%s: %s", r.Location, p))
			}
			if day.After(closed) {
				problems = append(problems, fmt.Sprintf("%s: partition for a day that is not closed (last closed %s)", r.Location, closed))
			}
			if r.Committed() {
				exportedDays[day.String()] = true
			}
		}
	}
	for d := range exportedDays {
		day, _ := civil.Parse(d)
		key := layout.DeliveryManifestKey(prefix, day)
		if _, err := b.Head(ctx, key); err != nil {
			problems = append(problems, fmt.Sprintf("%s: delivery manifest missing: %v", b.URI(key), err))
		}
	}
	sort.Strings(problems)
	return reports, problems, nil
}

// mirrorLimit bounds each object mirror reads: far above any object the
// demo writes.
const mirrorLimit = 1 << 30

// mirror copies every object of b into dir, object keys as paths.
func mirror(ctx context.Context, b *bucket.Bucket, dir string) error {
	objs, err := b.List(ctx, "", 100_000)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if strings.Contains(o.Key, "..") {
			return fmt.Errorf("refusing to mirror key %q", o.Key)
		}
		path := filepath.Join(dir, filepath.FromSlash(o.Key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		body, err := b.Get(ctx, o.Key, mirrorLimit)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
