// Package chaos runs the whole pipeline locally under injected faults and
// checks that the data invariants hold once it drains. moto plays AWS with
// template.yaml deployed into it; the real sweeper and exporter bootstraps
// run under the Lambda Runtime Interface Emulator; the demo SQLite source
// (with one day large enough for multipart uploads) feeds them. Between each
// exporter and moto's S3 sits a fault-injecting reverse proxy (Proxy): it
// answers 500 and 503, resets connections, forwards a request and drops the
// answer, and SIGKILLs the exporter just before or just after a request of
// the commit protocol takes effect. The driver sweeps with two sweepers at
// once, delivers jobs to several exporters at once, delivers some twice,
// asks for re-exports, and after each drained round does what the passing
// of time would (the dead claims' leases end, failed rows are due again).
// Every fault decision is drawn from the seed, the request and how often it
// was seen (see Faults). After the first rounds it also delivers forged
// messages, which must all be dead-lettered with a reason and change
// nothing (forged.go). When the pipeline has drained, Check verifies every
// invariant; the Report says what was injected where.
//
// `make chaos` runs a full run (TestChaos, DAYBOOK_CHAOS=1); a short seeded
// run is part of the normal tests (TestChaosShort).
package chaos

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	_ "modernc.org/sqlite"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/demosource"
	"github.com/daybook-dev/daybook/shared/devkit/ledgertest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/runtimeemulator"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Options shape a run. Zero values take the defaults of Defaults.
type Options struct {
	Seed uint64
	// Kills is how many exporters to SIGKILL at least: the driver asks for
	// re-exports until the proxies have killed this many.
	Kills int
	Rates Rates
	// Duplicate is the probability that a delivered message is sent again
	// (a duplicate delivery, often concurrent with the first).
	Duplicate float64
	// Reexports is how many manual re-exports a round asks for while the
	// kills are short of Kills.
	Reexports int
	MaxRounds int
	Exporters int // exporter instances, each behind its own proxy
	Days      int // demo days
	// EventsPerDay is the demo's volume; BigRows events of ~1.4 KB are added
	// to the first account's last closed day, so its file is uploaded in
	// multipart parts (and re-exported every round while kills are short).
	EventsPerDay int
	BigRows      int
	// SliceRows is the exporter's SLICE_ROWS: days with more rows are
	// exported in slices, each slice's run as exposed to the faults as any
	// run. Zero leaves the deployment's default (no demo day is sliced).
	SliceRows int
	// StoreDatasets, when set, are the only datasets the GCS and Azure
	// accounts export (a short run's smaller share of the work); nil is
	// every dataset.
	StoreDatasets []string
	Dir           string // logs and the source; required
	BinDir        string // <LogicalId>/bootstrap host builds (make build); required
	Template      string // template.yaml; required
	Log           io.Writer
	// SelfTest, after the check, breaks the delivered data once per
	// invariant and checks again, failing the run unless each is reported.
	SelfTest bool
	// Endpoint, when set, is the AWS endpoint a function instance (its
	// logical id) runs with in front of its upstreams (moto, and per
	// signing service the serializing DynamoDB proxy and the exporter's
	// fault proxy): the tests put a proxy there that checks every call
	// against the function's policy in the template.
	Endpoint func(fn, upstream string, services map[string]string) string
}

// Defaults are the full run's settings.
var Defaults = Options{
	Seed: 20261201, Kills: 200, Rates: Rates{Kill: 0.03, Error: 0.02, Reset: 0.01, Drop: 0.02, Outage: 0.004, CreateDrop: 0.3, DeliveryKill: 0.1},
	Duplicate: 0.1, Reexports: 24, MaxRounds: 150, Exporters: 2, Days: 6, EventsPerDay: 40, BigRows: 5000, SliceRows: 2000,
}

func (o *Options) defaults() {
	d := Defaults
	if o.Rates == (Rates{}) {
		o.Rates = d.Rates
	}
	o.Seed = cmpOr(o.Seed, d.Seed)
	o.Kills = cmpOr(o.Kills, d.Kills)
	o.Reexports = cmpOr(o.Reexports, d.Reexports)
	o.MaxRounds = cmpOr(o.MaxRounds, d.MaxRounds)
	o.Exporters = cmpOr(o.Exporters, d.Exporters)
	o.Days = cmpOr(o.Days, d.Days)
	o.EventsPerDay = cmpOr(o.EventsPerDay, d.EventsPerDay)
	if o.Log == nil {
		o.Log = io.Discard
	}
}

func cmpOr[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// exporter is one exporter bootstrap under its own emulator; the emulator
// serves one invocation at a time.
type exporter struct {
	fn    *runtimeemulator.Function
	proxy *Proxy
}

// kill SIGKILLs the bootstrap (the emulator's child), never the emulator,
// which starts a fresh one for the next invocation, like a cold start.
func (x *exporter) kill() bool {
	killed := false
	for _, pid := range children(x.fn.Pid) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = true
		}
	}
	return killed
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			var c int
			if _, err := fmt.Sscan(f, &c); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// pipeline is a running local deployment.
type pipeline struct {
	o         Options
	catalog   *dataset.Set // the demo source's: the shipped example
	started   time.Time
	s3        *s3.Client
	sqs       *sqs.Client
	led       *ledger.Ledger
	source    *sql.DB
	queueURL  string
	queueARN  string
	dlqURL    string
	forgedURL string // the queue of forged messages (forged.go), once made
	stage     string
	accounts  []account.Account
	sweepers  []*runtimeemulator.Function
	exporters []*exporter
	faults    *Faults
	big       *partition.Key // the partition with a multipart file, if any
	rng       *rand.Rand
	rep       *Report
	mu        sync.Mutex               // guards rep's counters while exporters run
	races     races                    // account races (accounts.go)
	expired   map[partition.Key]expiry // dead claims whose lease passTime ended (reclaim.go)
	other     otherStores              // GCS and Azure (stores.go)
	stop      []func()
}

const stage = "chaos"

// Run starts the pipeline, drives it to a drained state under faults and
// checks the invariants. The error is for a run that could not be carried
// out; broken invariants are the Report's Problems.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	if o.Dir == "" || o.BinDir == "" || o.Template == "" {
		return nil, errors.New("chaos: Dir, BinDir and Template are required")
	}
	cat, err := dataset.Example()
	if err != nil {
		return nil, err
	}
	p := &pipeline{o: o, catalog: cat, started: time.Now(), faults: NewFaults(o.Seed, o.Rates, o.Kills),
		rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed)), rep: &Report{Seed: o.Seed}}
	defer p.close()
	// The new drivers' protocol steps get a kill each, whatever the draws.
	for _, store := range []string{StoreGCS, StoreAzure} {
		p.faults.KillAt(store, StepData, StepManifest, StepSuccess, StepIceberg)
	}
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	runErr := p.drive(ctx)
	if err := p.check(ctx); err != nil {
		return p.rep, err
	}
	p.rep.Duration = time.Since(p.started)
	p.rep.Faults, p.rep.Requests = p.faults.Counts()
	p.rep.Stores = p.faults.Stores()
	p.rep.Kills = p.faults.Kills()
	if runErr == nil && p.o.SelfTest {
		runErr = p.selfTest(ctx)
	}
	return p.rep, runErr
}

func (p *pipeline) close() {
	for i := len(p.stop) - 1; i >= 0; i-- {
		p.stop[i]()
	}
}

func (p *pipeline) logf(format string, args ...any) {
	fmt.Fprintf(p.o.Log, "%6.1fs  "+format+"\n", append([]any{time.Since(p.started).Seconds()}, args...)...)
}

// up starts moto, deploys the template, generates the source, registers
// the accounts and starts the functions and the proxies.
func (p *pipeline) up(ctx context.Context) error {
	logs := filepath.Join(p.o.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	srv, err := motoserver.Start(ctx, filepath.Join(logs, "moto.log"))
	if err != nil {
		return err
	}
	p.stop = append(p.stop, func() { _ = srv.Stop() })
	// moto does not lock an item across a conditional write; DynamoDB does,
	// and the ledger's claims rest on it: both functions reach moto's
	// DynamoDB through a proxy that serializes writes per item.
	dyn := &ledgertest.SerialProxy{Target: srv.URL, KeyAttrs: []string{ledger.AttrPK, ledger.AttrSK}}
	if err := dyn.Start(); err != nil {
		return err
	}
	p.stop = append(p.stop, func() { _ = dyn.Close() })
	cfg, err := srv.Config(ctx)
	if err != nil {
		return err
	}
	st, err := samstack.Up(ctx, cfg, p.o.Template, stage, map[string]string{
		"SourceDriver": "sqlite", "ExporterTimeoutSeconds": "180", "LeaseMarginSeconds": "0", "PerAccountCap": "50",
	})
	if err != nil {
		return err
	}
	p.stage = stage
	p.queueURL, p.dlqURL = st.Outputs["JobsQueueUrl"], st.Outputs["JobsDLQUrl"]
	p.s3, p.sqs = awsclient.NewS3(cfg), sqs.NewFromConfig(cfg)
	qa, err := p.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &p.queueURL,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return err
	}
	p.queueARN = qa.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	dcfg := cfg.Copy()
	dcfg.BaseEndpoint = aws.String(dyn.URL())
	if p.led, err = ledger.New(dynamodb.NewFromConfig(dcfg), ledger.Config{Catalog: p.catalog, Table: st.Outputs["LedgerTableName"], Lease: 180 * time.Second}); err != nil {
		return err
	}

	if err := p.startStores(ctx, logs); err != nil {
		return err
	}
	demo, err := demosource.Generate(ctx, demosource.Options{Path: filepath.Join(p.o.Dir, "source.db"), Now: p.started,
		Days: p.o.Days, EventsPerDay: p.o.EventsPerDay, Seed: p.o.Seed, Stage: stage, OtherStores: true})
	if err != nil {
		return err
	}
	p.pointStores(demo.Accounts)
	// Every account exports the same Days closed days (the first demo
	// account's longer backfill horizon would only add empty partitions).
	for i := range demo.Accounts {
		a := &demo.Accounts[i]
		a.StartDate = a.WithDefaults(0).ClosedThrough(p.started).AddDays(1 - p.o.Days)
	}
	for i := range demo.Accounts {
		if a := &demo.Accounts[i]; a.Destination.Kind() != account.StoreS3 && len(p.o.StoreDatasets) > 0 {
			a.Datasets = slices.Clone(p.o.StoreDatasets)
		}
	}
	p.accounts = demo.Accounts
	icebergAccount(p.accounts)
	if p.o.BigRows > 0 {
		a := p.accounts[0]
		p.big = &partition.Key{AccountID: a.ID, Dataset: "events", Day: a.WithDefaults(0).ClosedThrough(p.started)}
	}
	if err := p.addBigDay(ctx, demo.Path); err != nil {
		return err
	}
	if p.source, err = sql.Open("sqlite", "file:"+demo.Path+"?mode=ro"); err != nil {
		return err
	}
	p.stop = append(p.stop, func() { p.source.Close() })
	for _, a := range p.accounts {
		if err := p.createBucket(ctx, a.Destination); err != nil {
			return fmt.Errorf("create bucket %s: %w", a.Destination.URI(""), err)
		}
		if err := p.led.Accounts().PutAccount(ctx, a); err != nil {
			return err
		}
	}

	abs, err := filepath.Abs(demo.Path)
	if err != nil {
		return err
	}
	extra := map[string]string{"SOURCE_DSN": "file:" + abs + "?mode=ro", "AWS_ENDPOINT_URL_DYNAMODB": dyn.URL(),
		// Multipart from 5 MiB, so the big day's file is uploaded in parts.
		"PART_SIZE_BYTES": fmt.Sprint(5 << 20)}
	if p.o.SliceRows > 0 {
		extra["SLICE_ROWS"] = fmt.Sprint(p.o.SliceRows)
	}
	// The functions reach moto as the CLI and the Lambda binaries reach any endpoint.
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": srv.URL, "AWS_REGION": motoserver.Region, "AWS_DEFAULT_REGION": motoserver.Region,
		"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"} {
		extra[k] = v
	}
	env, err := samstack.FunctionEnv(ctx, cfg, st, []string{"SweeperFunction", "ExporterFunction"}, extra)
	if err != nil {
		return err
	}
	// endpoint points a function instance's calls at o.Endpoint, in front
	// of the upstreams env names.
	endpoint := func(fn string, env map[string]string) map[string]string {
		if p.o.Endpoint == nil {
			return env
		}
		env = maps.Clone(env)
		services := map[string]string{}
		for svc, v := range map[string]string{"dynamodb": "AWS_ENDPOINT_URL_DYNAMODB", "s3": "AWS_ENDPOINT_URL_S3"} {
			if u := env[v]; u != "" {
				services[svc] = u
				delete(env, v)
			}
		}
		env["AWS_ENDPOINT_URL"] = p.o.Endpoint(fn, env["AWS_ENDPOINT_URL"], services)
		return env
	}
	start := func(fn, name string, env map[string]string) (*runtimeemulator.Function, error) {
		env = endpoint(fn, env)
		logf, err := os.Create(filepath.Join(logs, name+".log"))
		if err != nil {
			return nil, err
		}
		f, err := runtimeemulator.Start(ctx, filepath.Join(p.o.BinDir, fn, "bootstrap"), runtimeemulator.Options{
			Name: name, Env: env, Log: logf, Timeout: 180 * time.Second})
		if err != nil {
			logf.Close()
			return nil, err
		}
		p.stop = append(p.stop, func() { _ = f.Stop(); logf.Close() })
		return f, nil
	}
	for i := range 2 {
		f, err := start("SweeperFunction", fmt.Sprintf("SweeperFunction-%d", i), env["SweeperFunction"])
		if err != nil {
			return err
		}
		p.sweepers = append(p.sweepers, f)
	}
	for i := range p.o.Exporters {
		x := &exporter{proxy: &Proxy{Target: srv.URL, Faults: p.faults}}
		if err := x.proxy.Start(); err != nil {
			return err
		}
		p.stop = append(p.stop, func() { _ = x.proxy.Close() })
		x.proxy.Kill = x.kill
		e := maps.Clone(env["ExporterFunction"])
		e["AWS_ENDPOINT_URL_S3"] = x.proxy.URL()
		if x.fn, err = start("ExporterFunction", fmt.Sprintf("ExporterFunction-%d", i), e); err != nil {
			return err
		}
		p.exporters = append(p.exporters, x)
	}
	p.logf("up: moto %s, fake-gcs-server %s, Azurite %s, %d accounts, %d exporters behind fault proxies, 2 sweepers, seed %d",
		srv.URL, p.other.gcs.URL, p.other.azure.URL, len(p.accounts), len(p.exporters), p.o.Seed)
	return nil
}

func (p *pipeline) createS3Bucket(ctx context.Context, name string) error {
	_, err := p.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	return err
}

// addBigDay adds BigRows events of ~1.4 KB of random hex to the first
// account's last closed day, whose Parquet file is then over 5 MiB.
func (p *pipeline) addBigDay(ctx context.Context, path string) error {
	if p.o.BigRows == 0 {
		return nil
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	a := p.accounts[0]
	day := a.WithDefaults(0).ClosedThrough(p.started)
	start, _ := a.Window(day)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	r := rand.New(rand.NewPCG(p.o.Seed, 1))
	blob := make([]byte, 700)
	step := 86_000 * time.Second / time.Duration(p.o.BigRows)
	for i := range p.o.BigRows {
		for j := range blob {
			blob[j] = byte(r.Uint32())
		}
		at := dataset.FormatTimestamp(start.Add(time.Duration(i) * step))
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at,
			session_id, user_id, value, amount, is_test, attributes) VALUES (?,?,?,?,?,?,NULL,NULL,NULL,NULL,0,?)`,
			a.ID, fmt.Sprintf("big_%s_%06d", day, i), "blob", at, at, at, `{"blob":"`+hex.EncodeToString(blob)+`"}`); err != nil {
			return err
		}
	}
	return tx.Commit()
}
