package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/demosource"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// The local stack's account: a fixed id, so the sample events in events/
// name an account that exists after `make local-up`.
const (
	LocalAccountID    = "acct_localdemoaccount"
	localBucket       = "daybook-exports-local"
	localBackfillDays = 7  // closed days the local account exports
	localDemoDays     = 14 // days of data in the local demo source
	localEventsPerDay = 300
)

// seedLocal creates the demo source (when the stack reads it), the local
// account's bucket, and registers the account with the operator CLI's
// `account put`.
func (a *app) seedLocal(ctx context.Context, d localDir, cfg aws.Config, source bool, settle time.Duration) error {
	now := a.now()
	if source {
		if _, err := demosource.Generate(ctx, demosource.Options{
			Path: d.sourceDB(), Now: now, Days: localDemoDays, EventsPerDay: localEventsPerDay, Seed: 20261129,
			Stage: "local", AccountIDs: []string{LocalAccountID},
		}); err != nil {
			return fmt.Errorf("demo source: %w", err)
		}
		fmt.Fprintf(a.stdout, "demo source %s: %d days of events, profiles and daily_stats\n", d.sourceDB(), localDemoDays)
	}
	if err := createLocalBucket(ctx, cfg); err != nil {
		return err
	}
	names := a.catalog.Names()
	op, err := operatorIn(d.binDir())
	if err != nil {
		return err
	}
	acct := localAccount(names, now)
	b, err := json.MarshalIndent(acct, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(d.accountFile(), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := op.run(ctx, io.Discard, "account", "put", "--file", d.accountFile(), "--env-file", d.envFile()); err != nil {
		return fmt.Errorf("register the local account: %w", err)
	}
	fmt.Fprintf(a.stdout, "account %s registered from %s: %s from %s, into s3://%s\n",
		LocalAccountID, d.accountFile(), strings.Join(names, ", "), acct.StartDate, localBucket)
	day, err := writeLocalEvents(d, acct, settle, now)
	if err != nil {
		return fmt.Errorf("sample events: %w", err)
	}
	fmt.Fprintf(a.stdout, "sample manual requests for the local account in %s: %s re-exports %s (make invoke-exporter; the day is in %s)\n",
		d.eventsDir(), localManualEvent, day, filepath.Join(d.eventsDir(), localDayFile))
	return nil
}

// localAccount is the local stack's account at now: every dataset, the last
// localBackfillDays days.
func localAccount(datasets []string, now time.Time) account.Account {
	return account.Account{
		ID: LocalAccountID, Name: "Local demo account", Enabled: true,
		StartDate:   civil.Of(now.UTC()).AddDays(-localBackfillDays),
		Datasets:    datasets,
		Destination: account.Destination{Bucket: localBucket, Region: demosource.Region, Format: fileformat.Default},
	}
}

func createLocalBucket(ctx context.Context, cfg aws.Config) error {
	api := awsclient.NewS3(cfg)
	if _, err := api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(localBucket)}); err != nil && !strings.Contains(err.Error(), "BucketAlready") {
		return fmt.Errorf("create bucket %s: %w", localBucket, err)
	}
	return nil
}

// localBucketFor is local up with the deployment's own catalog: the local
// bucket, and what to do next. The accounts are the platform's, so none is
// registered.
func (a *app) localBucketFor(ctx context.Context, d localDir, cfg aws.Config, catalog string) error {
	if err := createLocalBucket(ctx, cfg); err != nil {
		return err
	}
	set, err := dataset.Load(catalog)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "catalog %s: %s\nbucket s3://%s; register an account with DAYBOOK_CATALOG=%s daybook account put --file account.json --env-file %s\n",
		catalog, strings.Join(set.Names(), ", "), localBucket, catalog, d.envFile())
	return nil
}
