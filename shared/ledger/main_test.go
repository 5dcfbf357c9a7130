package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/metrics"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/daybook-dev/daybook/shared/devkit/ledgertest"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
)

var (
	srv  *motoserver.Server
	runs atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

var (
	deployOnce sync.Once
	deployErr  error
	stackCfg   aws.Config
	tableName  string
	serialOnce sync.Once
	serial     *ledgertest.SerialDB
)

// deployed deploys template.yaml once for the package and returns the SDK
// config and the ledger table name.
func deployed(t *testing.T) (aws.Config, string) {
	t.Helper()
	deployOnce.Do(func() {
		ctx := context.Background()
		stackCfg, deployErr = srv.Config(ctx)
		if deployErr != nil {
			return
		}
		var st *samstack.Stack
		st, deployErr = samstack.Deploy(ctx, stackCfg, "../../template.yaml", "daybook-ledgertest", map[string]string{"Stage": "ledgertest"})
		if deployErr == nil {
			tableName = st.Outputs["LedgerTableName"]
		}
	})
	if deployErr != nil {
		t.Fatal(deployErr)
	}
	return stackCfg, tableName
}

// clock is an injected, settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(s string) *clock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &clock{t: t}
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// seededRand is a deterministic random source named after the test.
func seededRand(t *testing.T) *rand.ChaCha8 {
	return rand.NewChaCha8(sha256.Sum256([]byte(t.Name())))
}

// testAccount returns an account id unique to the test.
func testAccount(t *testing.T, suffix string) string {
	// The run counter keeps ids unique under -count=N on one server.
	h := sha256.Sum256([]byte(fmt.Sprint(t.Name(), "/", suffix, "/", runs.Add(1))))
	return "acct_t" + hexN(binary.BigEndian.Uint64(h[:8]))
}

func hexN(v uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 15)
	for i := range b {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b)
}

const testLease = 20 * time.Minute

// newTestLedger is a ledger on the table of t's top-level test (created
// for it like the deployed one): moto reads the whole table for an
// index query and copies it for each item of a transaction, so a test on
// the package's shared table paid for every other test's items.
func newTestLedger(t *testing.T, c *clock, mut ...func(*Config)) (*Ledger, *dynamodb.Client) {
	t.Helper()
	cfg, deployedTable := deployed(t)
	table := samstacktest.OwnTable(t, cfg, deployedTable)
	db := dynamodb.NewFromConfig(cfg)
	serialOnce.Do(func() { serial = &ledgertest.SerialDB{Client: db, KeyAttrs: []string{AttrPK, AttrSK}} })
	lc := Config{Catalog: datasettest.Example(t),
		Table: table, Lease: testLease, MaxAttempts: 3,
		BackoffBase: time.Minute, BackoffCap: time.Hour,
		Now: c.Now, Rand: seededRand(t),
	}
	for _, f := range mut {
		f(&lc)
	}
	l, err := New(serial, lc)
	if err != nil {
		t.Fatal(err)
	}
	return l, db
}

// reported is a Reporter into buffers and what it was told.
type reported struct {
	emf, logs bytes.Buffer
}

func (r *reported) reporter() Reporter {
	return Reporter{Log: slog.New(slog.NewJSONHandler(&r.logs, nil)), Metrics: &metrics.Emitter{W: &r.emf, Stage: "test"}}
}

// warnings are the warnings logged: their account and cause.
func (r *reported) warnings(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range jsonLines(t, &r.logs) {
		if rec["level"] == "WARN" {
			out = append(out, rec)
		}
	}
	return out
}

// counted is the sum of metric over the EMF lines emitted.
func (r *reported) counted(t *testing.T, metric string) float64 {
	t.Helper()
	var n float64
	for _, rec := range jsonLines(t, &r.emf) {
		v, _ := rec[metric].(float64)
		n += v
	}
	return n
}

// jsonLines decodes each line of b, a JSON object.
func jsonLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}
