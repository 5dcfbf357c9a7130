package main

import (
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/daybook-dev/daybook/shared/devkit/ledgertest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
)

var (
	srv  *motoserver.Server
	runs atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

// stackStage is the stage of the stack the package's tests deploy.
const stackStage = "exporttest"

var (
	serialOnce sync.Once
	serial     *ledgertest.SerialProxy
	serialErr  error
)

// deployed is the real template.yaml deployed into this package's moto,
// and a configuration that reaches it through one proxy that serializes
// the writes to each item (moto does not; ledgertest.SerialProxy): the
// test's clients and the function's (through its policy check) alike.
func deployed(t *testing.T) (aws.Config, map[string]string) {
	t.Helper()
	cfg, out := samstacktest.Stack(t, srv, stackStage)
	serialOnce.Do(func() {
		serial = &ledgertest.SerialProxy{Target: srv.URL, KeyAttrs: []string{ledger.AttrPK, ledger.AttrSK}}
		serialErr = serial.Start()
	})
	if serialErr != nil {
		t.Fatal(serialErr)
	}
	cfg = cfg.Copy()
	cfg.BaseEndpoint = aws.String(serial.URL())
	return cfg, out
}

func dynamoClient(cfg aws.Config) *dynamodb.Client { return dynamodb.NewFromConfig(cfg) }

// clock is an injected, settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)         { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func at(s string) *clock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &clock{t: t}
}

// seeded is a deterministic random source named after the test.
func seeded(t *testing.T, salt string) *rand.ChaCha8 {
	return rand.NewChaCha8(sha256.Sum256([]byte(t.Name() + "/" + salt)))
}

// lockedReader makes a random source safe for concurrent use.
type lockedReader struct {
	mu sync.Mutex
	r  *rand.ChaCha8
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}
