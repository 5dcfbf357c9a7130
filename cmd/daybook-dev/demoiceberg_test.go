//go:build !noduckdb

package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
)

func init() { e2eTableReader = readEventsWithIcebird }

// readEventsWithIcebird reads the demo's events table with icebird, an
// independent JavaScript Iceberg reader, while moto still serves it, and
// compares its rows per day with the source's: DuckDB's iceberg extension,
// which the printed query uses, needs a download this test cannot make.
func readEventsWithIcebird(ctx context.Context, srv *motoserver.Server, res *demoResult) error {
	i := slices.IndexFunc(res.Tables, func(t demoTable) bool { return t.Dataset == "events" })
	if i < 0 {
		return fmt.Errorf("no events table among %+v", res.Tables)
	}
	t := res.Tables[i]
	cfg, err := srv.Config(ctx)
	if err != nil {
		return err
	}
	// icebird reads without credentials: the bucket lets anyone read.
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + t.Bucket + `/*"}]}`
	if _, err := awsclient.NewS3(cfg).PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(t.Bucket), Policy: &policy}); err != nil {
		return err
	}
	rows, err := parquetreaders.ReadIcebird(srv.URL, "s3://"+t.Bucket+"/"+t.Location, "event_id", "occurred_at")
	if err != nil {
		return err
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[civil.Of(r.Time()).String()]++
	}
	a := res.Accounts[demoTableAccount]
	want := map[string]int64{}
	for _, r := range res.Rows {
		if r.AccountID == a.ID && r.Dataset == "events" && r.Rows > 0 {
			want[r.Day.String()] = r.Rows
		}
	}
	if len(want) == 0 || len(got) != len(want) {
		return fmt.Errorf("icebird reads %d days of events, the ledger has %d with rows", len(got), len(want))
	}
	for d, n := range want {
		if got[d] != n || res.Expected[a.ID]["events"][d] != n {
			return fmt.Errorf("events dt=%s: icebird reads %d rows, the ledger has %d, the source %d", d, got[d], n, res.Expected[a.ID]["events"][d])
		}
	}
	icebirdRead = len(rows)
	return nil
}
