package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/eventsource"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/runtimeemulator"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/netguard"
	"github.com/daybook-dev/daybook/shared/partition"
)

func (a *app) localDrainCommand() *cobra.Command {
	dir := a.localDir
	var sweep bool
	var maxSweeps int
	var bin string
	c := &cobra.Command{
		Use:   "drain [--sweep]",
		Short: "Feed the jobs queue to the exporter under the runtime emulator until the queue is empty",
		Long: `Play the SQS event source mapping locally: receive the jobs queue one message at a time, invoke
the exporter's bootstrap under the runtime emulator with it, delete what it reports done, until
no message is left. Failed messages stay hidden for the queue's visibility timeout, as in AWS.
With --sweep, also play the scheduler: sweep, drain, and repeat until a sweep claims nothing.
Function output is appended to <dir>/<Function>.log. The bootstraps are read from <dir>/bin
(make build writes .local/bin) unless --bin names another directory: a kept demo's state is in
.demo and its bootstraps in .local/bin, so daybook-dev local drain --dir .demo --bin .local/bin
runs what the console queued there. A run kept with demo --keep mirrors its buckets into
<dir>/buckets: drain mirrors them again afterwards, so the folders show what the stack holds.`,
	}
	c.Flags().StringVar(&dir, "dir", dir, "state directory")
	c.Flags().StringVar(&bin, "bin", "", "directory of the functions' bootstraps (<Function>/bootstrap; default <dir>/bin)")
	c.Flags().BoolVar(&sweep, "sweep", false, "sweep and drain until no work is due")
	c.Flags().IntVar(&maxSweeps, "max-sweeps", 50, "with --sweep: give up after this many sweeps")
	c.RunE = func(c *cobra.Command, _ []string) error {
		ctx := c.Context()
		d := localDir(dir)
		bootstrap := d.bootstrap
		if bin != "" {
			bootstrap = func(fn string) string { return filepath.Join(bin, fn, "bootstrap") }
		}
		env, err := a.readLocalEnv(ctx, d)
		if err != nil {
			return err
		}
		if _, err := os.Stat(bootstrap("ExporterFunction")); err != nil {
			return fmt.Errorf("no exporter bootstrap at %s (make build writes .local/bin; name another directory with --bin): %w", bootstrap("ExporterFunction"), err)
		}
		vars := env["ExporterFunction"]
		cfg, err := motoserver.ConfigFor(ctx, vars["AWS_ENDPOINT_URL"])
		if err != nil {
			return err
		}
		q := sqs.NewFromConfig(cfg)
		queueURL := vars["JOBS_QUEUE_URL"]
		qa, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("jobs queue %s: %w", queueURL, err)
		}
		start := func(fn string) (*runtimeemulator.Function, error) {
			logf, err := os.OpenFile(filepath.Join(dir, fn+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, err
			}
			// The file stays open for the child; it is closed when the command exits.
			return runtimeemulator.Start(ctx, bootstrap(fn), runtimeemulator.Options{Name: fn, Env: env[fn], Log: logf, Timeout: 900 * time.Second})
		}
		exporter, err := start("ExporterFunction")
		if err != nil {
			return err
		}
		defer exporter.Stop()
		drv := &eventsource.Driver{Catalog: a.catalog, Exporter: exporter, Queue: q, QueueURL: queueURL, BatchSize: 1,
			QueueARN: qa.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], Region: cfg.Region}
		if err := sweepQueue(ctx, q, drv, env["SweeperFunction"]["SWEEP_QUEUE_URL"]); err != nil {
			return err
		}
		// The exporter moves a message that can never succeed (malformed, or a
		// request it refuses) to the dead-letter queue and reports it handled:
		// those are counted apart from the done ones.
		dlqURL := vars["JOBS_DLQ_URL"]
		before, err := queueDepth(ctx, q, dlqURL)
		if err != nil {
			return err
		}
		var p eventsource.Progress
		if sweep {
			sweeper, err := start("SweeperFunction")
			if err != nil {
				return err
			}
			defer sweeper.Stop()
			drv.Sweeper = sweeper
			p, err = drv.Run(ctx, a.now, maxSweeps)
			if err != nil {
				return err
			}
		} else if err := drv.Drain(ctx, &p); err != nil {
			return err
		}
		if sweep {
			fmt.Fprintf(a.stdout, "%d sweeps claimed %d partitions; ", p.Sweeps, p.Claimed)
		}
		after, err := queueDepth(ctx, q, dlqURL)
		if err != nil {
			return err
		}
		dead := min(max(after-before, 0), p.Done)
		// A failed export is recorded in the ledger and its message handled,
		// so the queue cannot tell an export that failed from one that
		// succeeded: the partitions' rows do.
		led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{Catalog: a.catalog, Table: vars["LEDGER_TABLE"], Lease: time.Hour})
		if err != nil {
			return err
		}
		out, err := outcomes(ctx, led, p.Partitions)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "the exporter took %d messages (%d handled, %d failed, %d moved to the dead-letter queue): %s; logs in %s\n",
			p.Messages, p.Done-dead, p.Failed, dead, out, filepath.Join(dir, "ExporterFunction.log"))
		if dead > 0 {
			fmt.Fprintf(a.stdout, "%d messages can never succeed as sent: see daybook dlq list (each says why), then daybook dlq delete or purge\n", dead)
		}
		accts, err := led.Accounts().ListAccounts(ctx)
		if err != nil {
			return err
		}
		if err := remirror(ctx, &destination.Clients{Base: cfg, Endpoints: netguard.Policy{AllowLoopback: true}}, accts, dir, a.stdout); err != nil {
			return err
		}
		var errs []error
		if out.failed > 0 {
			errs = append(errs, fmt.Errorf("%d of %d partitions failed: daybook status --state failed says why; each is retried after its backoff (local drain --sweep claims the retries)",
				out.failed, len(p.Partitions)))
		}
		if p.Failed > 0 {
			errs = append(errs, fmt.Errorf("%d messages failed: they stay hidden for the queue's visibility timeout, then come back; see %s and daybook status",
				p.Failed, filepath.Join(dir, "ExporterFunction.log")))
		}
		return errors.Join(errs...)
	}
	return c
}

// drained is what became of the partitions a drain's messages named, by
// their ledger rows.
type drained struct{ exported, failed, other int }

func (d drained) String() string {
	s := fmt.Sprintf("%d partitions exported, %d failed", d.exported, d.failed)
	if d.other > 0 {
		s += fmt.Sprintf(", %d not finished (queued again, or waiting for a retry)", d.other)
	}
	return s
}

// outcomes reads the ledger row of each partition: completed is exported,
// failed (retried later, or stopped) failed.
func outcomes(ctx context.Context, led *ledger.Ledger, keys []partition.Key) (drained, error) {
	var d drained
	for _, k := range keys {
		r, err := led.Partitions().Get(ctx, k)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			d.other++
			continue
		case err != nil:
			return d, fmt.Errorf("ledger row of %s %s %s: %w", k.AccountID, k.Dataset, k.Day, err)
		}
		switch r.State {
		case ledger.StateCompleted:
			d.exported++
		case ledger.StateFailed:
			d.failed++
		default:
			d.other++
		}
	}
	return d, nil
}

// remirror copies again every bucket the demo mirrored into <dir>/buckets
// (one folder per bucket, mirrorName: the S3 bucket's name or
// <store>-<bucket>), replacing the old copy, so a kept demo's folders show
// the generations a drain wrote. The buckets are the accounts' (each
// opened on its store: moto, or the kept fake-gcs-server and Azurite);
// a bucket without a mirror is left alone.
func remirror(ctx context.Context, stores *destination.Clients, accts []account.Account, dir string, out io.Writer) error {
	root := filepath.Join(dir, "buckets")
	done := map[string]bool{}
	n := 0
	for _, a := range accts {
		name := mirrorName(a.Destination)
		path := filepath.Join(root, name)
		if done[name] {
			continue
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		done[name] = true
		b, err := stores.Open(ctx, a.ID, a.Destination, bucket.Options{})
		if err != nil {
			return err
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		if err := mirror(ctx, b, path); err != nil {
			return fmt.Errorf("mirror %s: %w", b.URI(""), err)
		}
		n++
	}
	if n == 0 {
		return nil
	}
	_, err := fmt.Fprintf(out, "mirrored %d buckets into %s again\n", n, root)
	return err
}

// sweepQueue points drv at the sweeper's fan-out queue (the stack's
// SweepQueueUrl output, SWEEP_QUEUE_URL in the sweeper's environment), so
// that the local loop runs the sweeper on the shard messages a large sweep
// sends, as the sweeper's SQS event source does in AWS. A stack without the
// queue (url empty) leaves the driver without fan-out.
func sweepQueue(ctx context.Context, q *sqs.Client, drv *eventsource.Driver, url string) error {
	if url == "" {
		return nil
	}
	qa, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return fmt.Errorf("sweep queue %s: %w", url, err)
	}
	drv.SweepQueueURL, drv.SweepQueueARN = url, qa.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	return nil
}

// queueDepth is the messages in the queue at url (visible and in flight);
// 0 when url is empty (a stack without that queue).
func queueDepth(ctx context.Context, q *sqs.Client, url string) (int, error) {
	if url == "" {
		return 0, nil
	}
	n, err := jobs.Depth(ctx, q, url, jobs.Waiting, jobs.InFlight)
	if err != nil {
		return 0, fmt.Errorf("dead-letter queue %s: %w", url, err)
	}
	return n, nil
}
