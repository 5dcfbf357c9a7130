package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/verify"
)

func runVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("verify")
	envFile := envFileFlag(fs)
	acct, ds, day, _, _ := dayFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *acct == "" || *ds == "" || *day == "" {
		return errors.New("usage: daybook verify --account ID --dataset NAME --day YYYY-MM-DD")
	}
	d, err := civil.Parse(*day)
	if err != nil {
		return err
	}
	e, a, err := openAccount(ctx, *envFile, *acct)
	if err != nil {
		return err
	}
	prefix, api, err := e.bucket(a)
	if err != nil {
		return err
	}
	pp := layout.PartitionPrefix(prefix, *ds, d)
	r, err := verify.Partition(ctx, api, verify.Bucket{Name: a.Destination.Bucket, Owner: a.Destination.ExpectedBucketOwner}, pp, verify.CountRows)
	if err != nil {
		return err
	}
	switch {
	case !r.Committed:
		fmt.Fprintf(stdout, "s3://%s/%s: no _SUCCESS (not exported yet, in progress, or failed)\n", a.Destination.Bucket, pp)
		return errors.New("partition not committed")
	case r.OK():
		fmt.Fprintf(stdout, "s3://%s/%s: OK, generation %d, %d files, %d rows match the manifest\n", a.Destination.Bucket, pp, r.Generation, r.Files, r.Rows)
		return nil
	}
	for _, p := range r.Problems {
		fmt.Fprintln(stdout, "PROBLEM:", p)
	}
	return fmt.Errorf("%d problems in s3://%s/%s", len(r.Problems), a.Destination.Bucket, pp)
}

func runSQL(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("sql")
	envFile := envFileFlag(fs)
	acct, ds, day, _, _ := dayFlags(fs)
	engine := fs.String("engine", "", "engine: "+strings.Join(loadsql.Engines, ", "))
	current := fs.Bool("current-state", false, "print the current-state query of an activity dataset (latest row per id)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := dataset.Get(*ds)
	if err != nil {
		return err
	}
	p, note, err := sqlPartition(ctx, d, *acct, *day, *envFile)
	if err != nil {
		return err
	}
	var sql string
	if *current {
		sql, err = loadsql.CurrentState(*engine, p)
	} else {
		sql, err = loadsql.Generate(*engine, p)
	}
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintln(stdout, note)
	}
	_, err = io.WriteString(stdout, sql)
	return err
}

// sqlPartition describes the partition the SQL is for: the committed
// manifest when an account and day are given (exactly what `_load/` holds),
// otherwise a placeholder partition so an operator can read a dataset's DDL.
func sqlPartition(ctx context.Context, d dataset.Dataset, acct, day, envFile string) (loadsql.Partition, string, error) {
	if acct == "" {
		dd := civil.Of(time.Now().UTC().AddDate(0, 0, -1))
		if day != "" {
			var err error
			if dd, err = civil.Parse(day); err != nil {
				return loadsql.Partition{}, "", err
			}
		}
		const prefix = "<prefix>"
		return loadsql.Partition{
			Dataset: d, Day: dd, Generation: 1, Format: fileformat.Default, Bucket: "<bucket>",
			PartitionPrefix: layout.PartitionPrefix(prefix, d.Name, dd),
			Files:           []loadsql.File{{Key: layout.DataKey(prefix, d.Name, dd, 0, fileformat.Default.Extension())}},
		}, "-- placeholder partition: pass --account and --day for the SQL of a delivered partition", nil
	}
	if day == "" {
		return loadsql.Partition{}, "", errors.New("--day is required with --account")
	}
	dd, err := civil.Parse(day)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	e, a, err := openAccount(ctx, envFile, acct)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	prefix, api, err := e.bucket(a)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	key := layout.ManifestKey(prefix, d.Name, dd)
	var owner *string
	if o := a.Destination.ExpectedBucketOwner; o != "" {
		owner = &o
	}
	obj, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Destination.Bucket), Key: &key, ExpectedBucketOwner: owner})
	if err != nil {
		return loadsql.Partition{}, "", fmt.Errorf("read manifest s3://%s/%s: %w", a.Destination.Bucket, key, err)
	}
	defer obj.Body.Close()
	b, err := io.ReadAll(obj.Body)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	m, err := manifest.Decode(b)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	p, err := loadsql.ForManifest(d, m, a.Destination.Bucket, layout.PartitionPrefix(prefix, d.Name, dd))
	return p, "", err
}
