package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/cli"
)

// writeGate makes concurrent commands interleave in the worst order for a
// read-check-write: every command's first DynamoDB write waits until each
// of the n commands has reached its first write (or ended), so all of them
// have done their reads and checks before any writes; then the writes run
// one at a time (moto holds no per-item lock across a conditional write;
// DynamoDB does). No sleep: the order is forced, not hoped for.
type writeGate struct {
	n       int
	mu      sync.Mutex
	arrived int
	open    chan struct{}
	serial  sync.Mutex
}

func newWriteGate(n int) *writeGate { return &writeGate{n: n, open: make(chan struct{})} }

func (g *writeGate) arrive() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.arrived++; g.arrived == g.n {
		close(g.open)
	}
}

// app returns a test app whose DynamoDB writes pass the gate, and a func
// to call when its command has ended.
func (g *writeGate) app(t *testing.T) (*app, func()) {
	a, _, _ := testApp(t)
	var once sync.Once
	arrive := func() { once.Do(g.arrive) }
	mw := middleware.InitializeMiddlewareFunc("writeGate", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		switch in.Parameters.(type) {
		case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput, *dynamodb.TransactWriteItemsInput:
			arrive()
			<-g.open
			g.serial.Lock()
			defer g.serial.Unlock()
		}
		return next.HandleInitialize(ctx, in)
	})
	base := a.awsConfig
	a.awsConfig = func(ctx context.Context, region, profile string) (aws.Config, error) {
		cfg, err := base(ctx, region, profile)
		cfg.APIOptions = append(cfg.APIOptions, func(st *middleware.Stack) error { return st.Initialize.Add(mw, middleware.After) })
		return cfg, err
	}
	return a, arrive
}

// TestConcurrentOverlappingPutsOneWins: five `account put`s at once, each
// prefix nested in every other's, all read and check before
// any writes. Exactly one account is created; each other command is refused
// naming destination.prefix, and no two stored accounts overlap. On the old
// code (list, check, then an unconditional write) all five were created.
func TestConcurrentOverlappingPutsOneWins(t *testing.T) {
	s := deployed(t)
	// Five new accounts, each prefix inside the previous one's:
	// race/<id0>, race/<id0>/<id1>, ... (a prefix names its own account).
	rnd := rand.NewChaCha8(sha256.Sum256([]byte(uniqueName(t))))
	ids := make([]string, 5)
	prefixes := make([]string, len(ids))
	parent := "race"
	for i := range ids {
		ids[i], _ = account.NewID(rnd)
		prefixes[i] = parent + "/{{.AccountID}}"
		parent += "/" + ids[i]
	}
	gate := newWriteGate(len(prefixes))
	type outcome struct {
		r    result
		acct account.Account
	}
	outs := make([]outcome, len(prefixes))
	var wg sync.WaitGroup
	for i, p := range prefixes {
		a, done := gate.app(t)
		file := writeAccount(t, t.TempDir(), map[string]any{"id": ids[i], "destination": map[string]any{"bucket": "daybook-exports-clitest", "prefix": p}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			outs[i].r = s.run(t, a, "account", "put", "--file", file)
		}()
	}
	wg.Wait()
	won := 0
	for i, o := range outs {
		switch o.r.code {
		case 0:
			won++
			if err := json.Unmarshal([]byte(o.r.stdout), &outs[i].acct); err != nil {
				t.Fatal(err)
			}
		case cli.ExitError:
			if !strings.Contains(o.r.stderr, "destination.prefix") {
				t.Errorf("put of prefix %s refused without naming destination.prefix:\n%s", prefixes[i], o.r.stderr)
			}
		default:
			t.Errorf("put of prefix %s: exit %d\n%s", prefixes[i], o.r.code, o.r.stderr)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d overlapping puts succeeded, want exactly 1", won, len(prefixes))
	}
	var stored []string
	for _, a := range s.accounts(t) {
		if slices.Contains(ids, a.ID) {
			stored = append(stored, a.ID+" "+a.Destination.Prefix)
		}
	}
	if len(stored) != 1 {
		t.Errorf("stored accounts of the five: %v, want one", stored)
	}
}

// TestConcurrentPutsOfOneRoleOneWins: the role and external id pair is
// taken by one account only, whatever the interleaving (on the old code
// both were created).
func TestConcurrentPutsOfOneRoleOneWins(t *testing.T) {
	s := deployed(t)
	role := "arn:aws:iam::123456789012:role/daybook-export-" + strings.ToLower(strings.ReplaceAll(uniqueName(t), " #", "-"))
	gate := newWriteGate(2)
	codes := make([]result, 2)
	var wg sync.WaitGroup
	for i := range codes {
		a, done := gate.app(t)
		s.createBucket(t, fmt.Sprintf("acme-race-%d", i))
		file := writeAccount(t, t.TempDir(), map[string]any{"destination": map[string]any{
			"bucket": fmt.Sprintf("acme-race-%d", i), "role_arn": role, "external_id": "race-ext"}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			codes[i] = s.run(t, a, "account", "put", "--file", file)
		}()
	}
	wg.Wait()
	if codes[0].code+codes[1].code != cli.ExitError || !strings.Contains(codes[0].stderr+codes[1].stderr, `destination.external_id "race-ext"`) {
		t.Errorf("two puts of one role and external id: exits %d and %d, want one 0 and one 1 naming destination.external_id\n%s\n%s",
			codes[0].code, codes[1].code, codes[0].stderr, codes[1].stderr)
	}
}

// TestDisableDoesNotRevertAConcurrentChange: `account disable` reads the
// account, someone else moves its destination, then disable writes. The
// move stays and the account is disabled. On the old code disable wrote
// back the account it had read, reverting the destination.
func TestDisableDoesNotRevertAConcurrentChange(t *testing.T) {
	s := deployed(t)
	acct := s.newAccount(t, nil)
	a, _, _ := testApp(t)
	l := s.ledgerAt(t, testNow, 6)
	var once sync.Once
	mw := middleware.InitializeMiddlewareFunc("concurrentChange", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleInitialize(ctx, in)
		if _, ok := in.Parameters.(*dynamodb.GetItemInput); ok {
			once.Do(func() {
				// Between disable's read and its write.
				moved, gerr := l.Accounts().GetAccount(ctx, acct.ID)
				if gerr != nil {
					t.Error(gerr)
					return
				}
				moved.Destination.Prefix = "moved/{{.AccountID}}"
				if perr := l.Accounts().PutAccount(ctx, moved); perr != nil {
					t.Error(perr)
				}
			})
		}
		return out, md, err
	})
	base := a.awsConfig
	a.awsConfig = func(ctx context.Context, region, profile string) (aws.Config, error) {
		cfg, err := base(ctx, region, profile)
		cfg.APIOptions = append(cfg.APIOptions, func(st *middleware.Stack) error { return st.Initialize.Add(mw, middleware.After) })
		return cfg, err
	}
	if r := s.run(t, a, "account", "disable", acct.ID); r.code != 0 {
		t.Fatalf("disable: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got, err := l.Accounts().GetAccount(context.Background(), acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Destination.Prefix != "moved/{{.AccountID}}" || got.Enabled {
		t.Errorf("after disable: prefix %q, enabled %v; want the concurrent move kept and the account disabled", got.Destination.Prefix, got.Enabled)
	}
}

// TestConcurrentPutsOfOneTenantOneWins: three `account put`s at once name
// one tenant, as "N", "00N" and "+N" (one integer to an integer tenant
// column; a string dataset takes all three forms) on different source
// shards, and all read and check before any writes: exactly one is
// created, each other refused naming tenant_key. On the old code all three
// were created: tenant keys had no guard item, and the command's own check
// compared raw strings.
func TestConcurrentPutsOfOneTenantOneWins(t *testing.T) {
	s := deployed(t)
	sum := sha256.Sum256([]byte(uniqueName(t)))
	n := fmt.Sprint(1 + int64(sum[0])<<16 | int64(sum[1])<<8 | int64(sum[2]))
	keys := []string{n, "00" + n, "+" + n}
	shards := []string{"", "eu", "us"}
	gate := newWriteGate(len(keys))
	outs := make([]result, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		a, done := gate.app(t)
		fields := map[string]any{"tenant_key": key}
		if shards[i] != "" {
			fields["source_shard"] = shards[i]
		}
		file := writeAccount(t, t.TempDir(), fields)
		wg.Go(func() {
			defer done()
			outs[i] = s.run(t, a, "account", "put", "--file", file)
		})
	}
	wg.Wait()
	won := 0
	for i, o := range outs {
		switch o.code {
		case 0:
			won++
		case cli.ExitError:
			if !strings.Contains(o.stderr, fmt.Sprintf("tenant_key %q", keys[i])) || !strings.Contains(o.stderr, "the same tenant's rows") {
				t.Errorf("put of tenant key %s refused without naming tenant_key:\n%s", keys[i], o.stderr)
			}
		default:
			t.Errorf("put of tenant key %s: exit %d\n%s", keys[i], o.code, o.stderr)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d puts of one tenant succeeded, want exactly 1", won, len(keys))
	}
	stored := 0
	for _, a := range s.accounts(t) {
		if slices.Contains(keys, a.TenantKey) {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("%d accounts of tenant %s stored, want one", stored, n)
	}
}
