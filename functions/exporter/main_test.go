package main

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/localaws"
	"github.com/daybook-dev/daybook/shared/motoserver"
)

var (
	srv  *motoserver.Server
	runs atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(motoserver.RunTests(m, &srv)) }

var (
	deployOnce sync.Once
	deployErr  error
	awsCfg     aws.Config
	outputs    map[string]string
	serialOnce sync.Once
	serial     *serialDB
)

// deployed deploys template.yaml into moto once for the package and returns
// the SDK configuration and the stack outputs.
func deployed(t *testing.T) (aws.Config, map[string]string) {
	t.Helper()
	deployOnce.Do(func() {
		ctx := context.Background()
		if awsCfg, deployErr = srv.Config(ctx); deployErr != nil {
			return
		}
		st, err := localaws.Deploy(ctx, awsCfg, "../../template.yaml", "daybook-exporttest", map[string]string{"Stage": "exporttest"})
		if err != nil {
			deployErr = err
			return
		}
		outputs = st.Outputs
		// moto runs the exporter's SQS event source mapping inside
		// SendMessage and takes the messages off the queue; the fan-out test
		// reads the queue itself, so the mapping is disabled (as in the
		// sweeper's tests: only Enabled=false stops it).
		lc := lambda.NewFromConfig(awsCfg)
		maps, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(st.Outputs["ExporterFunctionName"])})
		if err != nil {
			deployErr = err
			return
		}
		for _, m := range maps.EventSourceMappings {
			if _, err := lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: aws.Bool(false)}); err != nil {
				deployErr = err
				return
			}
		}
	})
	if deployErr != nil {
		t.Fatal(deployErr)
	}
	return awsCfg, outputs
}

// serialDB works around a moto gap: moto evaluates a ConditionExpression and
// applies the write without a per-item lock, so two concurrent conditional
// writes to one item can both succeed there; DynamoDB serializes writes to an
// item and L2 rests on that. serialDB serializes writes per key (moto still
// evaluates every condition).
type serialDB struct {
	*dynamodb.Client
	locks sync.Map
}

func (s *serialDB) lock(key map[string]ddbtypes.AttributeValue) func() {
	str := func(v ddbtypes.AttributeValue) string {
		if sv, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
			return sv.Value
		}
		return ""
	}
	m, _ := s.locks.LoadOrStore(str(key[ledger.AttrPK])+"|"+str(key[ledger.AttrSK]), &sync.Mutex{})
	m.(*sync.Mutex).Lock()
	return m.(*sync.Mutex).Unlock
}

func (s *serialDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	defer s.lock(in.Key)()
	return s.Client.UpdateItem(ctx, in, opts...)
}

func (s *serialDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	defer s.lock(in.Item)()
	return s.Client.PutItem(ctx, in, opts...)
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
