package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/sourcetest"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/source"
)

// unreadable returns the error a source gives when its database is gone.
func unreadable(t *testing.T) error {
	t.Helper()
	db, _ := sourceDB(t, false)
	src, err := source.NewSQL(db, dataset.DialectSQLite, "sqlite:test.db")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	day := civil.MustParse("2026-03-05")
	_, err = sourcetest.Rows(t.Context(), src, source.Query{AccountID: "a", Dataset: mustDataset(t, "events"), Day: day,
		Start: day.Start(time.UTC), End: day.AddDays(1).Start(time.UTC)}, func([]any) error { return nil })
	if err == nil {
		t.Fatal("a closed database was read")
	}
	return err
}

func TestClassify(t *testing.T) {
	_, missingBucket := bucket.New(buckettest.NewFake(), "gone", bucket.Options{}).Get(t.Context(), "k", testReadLimit)
	denied := &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	// A day folder holding one object more than its listing allows: the
	// listing's own refusal, as step 5's cleanup meets it at
	// bucket.MaxStaleListed.
	crowded := bucket.New(buckettest.NewFake("b"), "b", bucket.Options{})
	for _, k := range []string{"acct/v1/events/dt=2026-03-05/planted-1", "acct/v1/events/dt=2026-03-05/planted-2"} {
		if err := crowded.Put(t.Context(), k, []byte("x"), ""); err != nil {
			t.Fatal(err)
		}
	}
	_, tooMany := crowded.List(t.Context(), "acct/v1/events/dt=2026-03-05/", 1)
	for _, tc := range []struct {
		name string
		err  error
		want manifest.Code
	}{
		{"source unreadable", fmt.Errorf("write data: %w", unreadable(t)), manifest.CodeSourceUnavailable},
		{"bad row", fmt.Errorf("write data: %w", &dataset.RowError{Dataset: "events", Row: 2, Column: "value", Reason: "NaN"}), manifest.CodeSchemaMismatch},
		{"run out of time", fmt.Errorf("upload: put s3://b/k: %w", context.DeadlineExceeded), manifest.CodeTimedOut},
		{"out of time reading the source", fmt.Errorf("write data: %w", errors.Join(unreadable(t), context.DeadlineExceeded)), manifest.CodeTimedOut},
		{"a writer denied (unclassified SDK error)", fmt.Errorf("write data: upload: complete: %w", denied), manifest.CodeDestinationDenied},
		{"bucket denied", fmt.Errorf("remove old _SUCCESS: %w", bucket.Classify(denied)), manifest.CodeDestinationDenied},
		{"no such bucket", fmt.Errorf("read old _SUCCESS: %w", missingBucket), manifest.CodeDestinationMissing},
		{"no such bucket from a writer", fmt.Errorf("upload: %w", &types.NoSuchBucket{}), manifest.CodeDestinationMissing},
		{"bucket owner unknown", fmt.Errorf("account acct_x: %w", func() error {
			_, err := (account.Destination{Bucket: "b"}).BucketOwner("")
			return err
		}()), manifest.CodeDestinationMisconfigured},
		{"a crowded day folder", fmt.Errorf("stale cleanup: %w", tooMany), manifest.CodeDestinationCrowded},
		{"not found is no bucket problem", fmt.Errorf("x: %w", &types.NoSuchKey{}), manifest.CodeInternal},
		{"anything else", errors.New("account acct_x is disabled"), manifest.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.err); got != tc.want {
				t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
			}
			f := newFailure(tc.err)
			if !strings.HasPrefix(f.Error(), string(tc.want)+": "+tc.err.Error()) || manifest.CauseOf(f.Error()) != tc.want || !errors.Is(f, tc.err) {
				t.Errorf("failure text %q", f)
			}
		})
	}
}

// TestFailureCodesReachTheBucketNotTheErrors: a failed export records its
// cause code and raw error in the ledger; the customer's delivery manifest
// says the code and a sentence, and nothing of the error: not the database
// user, name or host of a pgx connection error, not the S3 request.
func TestFailureCodesReachTheBucketNotTheErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(e *env)
		code     manifest.Code
		internal []string // in the ledger's error, never in the bucket
	}{
		{"source unavailable", func(e *env) {
			db, err := sql.Open("pgx", "postgres://daybook_ro:s3cret@127.0.0.1:1/proddb?connect_timeout=5")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			src, err := source.NewSQL(db, dataset.DialectPostgres, "pgx")
			if err != nil {
				t.Fatal(err)
			}
			e.exp.Source = src
		}, manifest.CodeSourceUnavailable, []string{"daybook_ro", "proddb", "127.0.0.1"}},
		{"destination denied", func(e *env) {
			e.insert("events", genRows("events", testDay, 3)...)
			e.faults.Set(func(c buckettest.Call) error {
				if c.Op == buckettest.OpPut && strings.HasSuffix(c.Key, ".parquet") {
					return &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied; request id 4K2Q9X"}
				}
				return nil
			}, nil)
		}, manifest.CodeDestinationDenied, []string{"4K2Q9X", "part-00000.parquet"}},
		{"schema mismatch", func(e *env) {
			rows := genRows("events", testDay, 2)
			rows[1][6] = "NaN"
			e.insert("events", rows...)
		}, manifest.CodeSchemaMismatch, []string{"column value", "row 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			tc.setup(e)
			c := e.claim("events", testDay, "")
			if err := e.process(jobBody(t, c)); err != nil {
				t.Fatalf("a recorded failure is a done message: %v", err)
			}
			r := e.notCommitted("events", testDay)
			if !strings.HasPrefix(r.LastError, string(tc.code)+": ") {
				t.Errorf("ledger error %q does not start with %s", r.LastError, tc.code)
			}
			contains(t, "ledger error", r.LastError, tc.internal...)
			raw := string(e.get(layout.DeliveryManifestKey(e.prefix, testDay)))
			d := e.delivery(testDay)
			if len(d.DatasetsMissing) != 1 || d.DatasetsMissing[0].Code != tc.code || d.DatasetsMissing[0].Cause != tc.code ||
				!strings.HasPrefix(d.DatasetsMissing[0].Reason, tc.code.Sentence()) {
				t.Errorf("missing %+v", d.DatasetsMissing)
			}
			for _, s := range tc.internal {
				if strings.Contains(raw, s) {
					t.Errorf("the delivery manifest holds %q:\n%s", s, raw)
				}
			}
		})
	}
}
