package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/verify"
)

// verified is one partition's verification, for output.
type verified struct {
	Dataset    string   `json:"dataset"`
	Day        string   `json:"day"`
	Location   string   `json:"location"`
	Committed  bool     `json:"committed"`
	OK         bool     `json:"ok"`
	Generation int64    `json:"generation,omitempty"`
	Files      int      `json:"files,omitempty"`
	Rows       int64    `json:"rows,omitempty"`
	Problems   []string `json:"problems,omitempty"`
}

// verifyFlags are verify's flags besides the partition's: the customer's
// form names the bucket itself.
type verifyFlags struct {
	partitionFlags
	bucket, prefix, endpoint string
	download                 bool
}

func (a *app) verifyCommand() *cobra.Command {
	var p verifyFlags
	c := &cobra.Command{
		Use:   "verify (--account ID | --bucket BUCKET --prefix PREFIX) [--dataset NAME] (--day DAY | --from DAY --to DAY)",
		Short: "Check delivered partitions against their manifests (files, sizes, checksums, row counts)",
		Long: `Check delivered partitions against their manifests: every data file listed, no other file,
sizes, CRC32C and SHA-256, and row counts read back from the files. Exits 1 when a partition has
a problem or is not committed (no _SUCCESS).

Two ways to name the partitions:
  --account ID               an account of the deployment (the operator's view); every file is
                             read in full
  --bucket B --prefix P      the bucket itself, with read access to it alone (the customer's
                             view): no deployment. B is an S3 bucket (NAME or s3://NAME:
                             credentials from the usual AWS chain, --profile, --region), a
                             Google Cloud Storage bucket (gs://NAME: Application Default
                             Credentials, gcloud auth application-default login) or an Azure
                             container (az://ACCOUNT/CONTAINER, or the abfss:// URI daybook
                             prints: DefaultAzureCredential, az login); --endpoint for an
                             S3-compatible store or an emulator. Files are read in full only
                             with --download; otherwise the checksums the store keeps (S3,
                             GCS; Azure keeps none daybook can compare, so its files are read
                             in full) and the Parquet footers are used.
Without --dataset, every dataset of the account, or every dataset folder under the prefix.
With --account a dataset is checked under its current contract; with --bucket, events is the
v1/events/ folder and events.v2 the v2/events/ one.

Install it without the repository: go install github.com/daybook-dev/daybook/cmd/daybook@latest,
or a release binary (make release builds them into dist/).`,
		Example: `  daybook verify --account acct_localdemoaccount --dataset events --day 2026-11-20
  daybook verify --account acct_localdemoaccount --from 2026-11-01 --to 2026-11-30
  daybook verify --bucket my-exports --prefix daybook/acct_7f3a9c --dataset events --day 2026-11-20 --download
  daybook verify --bucket gs://my-exports --prefix daybook/acct_7f3a9c --day 2026-11-20
  daybook verify --bucket az://acmedata/exports --prefix daybook/acct_7f3a9c --day 2026-11-20`,
	}
	a.deploymentFlags(c)
	p.register(c, true)
	c.Flags().StringVar(&p.bucket, "bucket", "", "the bucket to read (instead of --account): NAME or s3://NAME, gs://NAME, az://ACCOUNT/CONTAINER; read access is enough")
	c.Flags().StringVar(&p.prefix, "prefix", "", "with --bucket: the part of every key before /v1/")
	c.Flags().StringVar(&p.endpoint, "endpoint", "", "with --bucket: the store's endpoint URL (an S3-compatible store, or an emulator)")
	c.Flags().BoolVar(&p.download, "download", false, "with --bucket: read every data file in full (checksums recomputed, every row counted)")
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		switch {
		case p.account != "" && p.bucket != "":
			return cli.Usagef(c, "give --account or --bucket, not both")
		case p.account == "" && p.bucket == "":
			return cli.Usagef(c, "--account (an account of the deployment) or --bucket and --prefix (the bucket itself) is required")
		case p.bucket != "" && p.prefix == "":
			return cli.Usagef(c, "--prefix is required with --bucket (the part of every key before /v1/)")
		case p.bucket == "" && (p.prefix != "" || p.endpoint != "" || p.download):
			return cli.Usagef(c, "--prefix, --endpoint and --download go with --bucket")
		}
		if p.dataset != "" {
			if _, err := datasetFlag(c, p.dataset); err != nil {
				return err
			}
		}
		from, to, err := dayRange(c, p.day, p.from, p.to)
		if err != nil {
			return err
		}
		var src verifySource
		if p.bucket != "" {
			src, err = a.bucketSource(c, p)
		} else {
			src, err = a.accountSource(c.Context(), p.account)
		}
		if err != nil {
			return err
		}
		return a.verifyDays(c.Context(), src, p.dataset, from, to, *out)
	}
	return c
}

// verifySource is where verify reads: a bucket, a prefix and the datasets
// to check without --dataset.
type verifySource struct {
	reader   verify.Reader
	target   verify.Target // Bucket and Prefix
	datasets []string
	opts     verify.Options
	// current: the names are the catalog's datasets, checked under their
	// current contract (--account); otherwise a bare name is the v1 folder
	// and events.v2 the v2 one, as the bucket shows them.
	current bool
}

// currentTree is the folder name of the catalog's dataset under its
// current contract (events, or events.v2 once it is at v2).
func currentTree(name string) string {
	if d, err := dataset.Get(name); err == nil {
		return d.LedgerName()
	}
	return name
}

func (a *app) accountSource(ctx context.Context, id string) (verifySource, error) {
	e, acct, err := a.account(ctx, id, "--account")
	if err != nil {
		return verifySource{}, err
	}
	prefix, err := acct.Prefix(e.stage)
	if err != nil {
		return verifySource{}, err
	}
	b, err := e.bucket(ctx, acct)
	if err != nil {
		return verifySource{}, err
	}
	return verifySource{reader: b, target: verify.Target{Bucket: acct.Destination.Bucket, Prefix: prefix},
		datasets: acct.Datasets, opts: verify.Options{Download: true}, current: true}, nil
}

// bucketSource is the customer's form: the bucket alone, credentials from
// the SDK's chain, no deployment.
func (a *app) bucketSource(c *cobra.Command, p verifyFlags) (verifySource, error) {
	ctx := c.Context()
	prefix := strings.Trim(p.prefix, "/")
	if err := layout.ValidateRendered(prefix); err != nil {
		return verifySource{}, cli.Usagef(c, "--prefix %q: %v", p.prefix, err)
	}
	if p.endpoint != "" {
		if u, err := url.Parse(p.endpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return verifySource{}, cli.Usagef(c, "--endpoint %q: not a URL (want http(s)://host[:port])", p.endpoint)
		}
	}
	loc, err := parseBucketFlag(p.bucket)
	if err != nil {
		return verifySource{}, cli.Usagef(c, "--bucket %q: %v", p.bucket, err)
	}
	b, err := a.customerBucket(ctx, loc, p.endpoint)
	if err != nil {
		return verifySource{}, err
	}
	t := verify.Target{Bucket: loc.bucket, Prefix: prefix}
	src := verifySource{reader: b, target: t, opts: verify.Options{Download: p.download}}
	if p.dataset == "" {
		if src.datasets, err = verify.Datasets(ctx, b, t); err != nil {
			return verifySource{}, err
		}
		if len(src.datasets) == 0 {
			return verifySource{}, fmt.Errorf("%s: no dataset folders (is --prefix right?)", b.URI(layout.ContractPrefix(prefix)))
		}
	}
	return src, nil
}

// verifyDays checks every day from..to of each dataset (only dataset when
// set) and prints the results.
func (a *app) verifyDays(ctx context.Context, src verifySource, dataset string, from, to civil.Date, out outputFormat) error {
	datasets := src.datasets
	if dataset != "" {
		datasets = []string{dataset}
	}
	days := civil.Range(from, to)
	bar := a.progress(len(days)*len(datasets), "verify")
	var results []verified
	for _, ds := range datasets {
		if src.current {
			ds = currentTree(ds)
		}
		for _, d := range days {
			t := src.target
			t.Dataset, t.Day = ds, d
			r, err := verify.Check(ctx, src.reader, t, src.opts)
			if err != nil {
				bar.Finish()
				return fmt.Errorf("verify %s: %w", src.reader.URI(t.PartitionPrefix()), err)
			}
			results = append(results, verified{Dataset: ds, Day: d.String(), Location: r.Location,
				Committed: r.Committed(), OK: r.Status == verify.StatusOK, Generation: r.Generation, Files: r.Files, Rows: r.Rows, Problems: r.Problems()})
			bar.Add(1)
		}
	}
	bar.Finish()
	return a.printVerified(out, results)
}

func (a *app) printVerified(out outputFormat, results []verified) error {
	var notCommitted, bad int
	for _, r := range results {
		switch {
		case !r.Committed:
			notCommitted++
		case !r.OK:
			bad++
		}
	}
	if out == outputJSON {
		if err := printJSON(a.stdout, nonNil(results)); err != nil {
			return err
		}
	} else if len(results) == 1 {
		r := results[0]
		switch {
		case !r.Committed:
			fmt.Fprintf(a.stdout, "%s: no _SUCCESS (not exported yet, in progress, or failed)\n", r.Location)
		case r.OK:
			fmt.Fprintf(a.stdout, "%s: OK, generation %d, %d files, %d rows match the manifest\n", r.Location, r.Generation, r.Files, r.Rows)
		}
		for _, p := range r.Problems {
			fmt.Fprintln(a.stdout, "PROBLEM:", printable(fmt.Sprint(p)))
		}
	} else {
		tw := newTable(a.stdout)
		tw.header("DATASET\tDAY\tRESULT\tGENERATION\tFILES\tROWS")
		for _, r := range results {
			res := "OK"
			switch {
			case !r.Committed:
				res = "not committed"
			case !r.OK:
				res = fmt.Sprintf("%d problems", len(r.Problems))
			}
			tw.row(r.Dataset, r.Day, res, r.Generation, r.Files, r.Rows)
		}
		tw.Flush()
		for _, r := range results {
			for _, p := range r.Problems {
				fmt.Fprintf(a.stdout, "PROBLEM: %s %s: %s\n", r.Dataset, r.Day, printable(fmt.Sprint(p)))
			}
		}
		fmt.Fprintf(a.stdout, "%d partitions: %d OK, %d not committed, %d with problems\n", len(results), len(results)-notCommitted-bad, notCommitted, bad)
	}
	switch {
	case len(results) == 1 && notCommitted == 1:
		return errors.New("partition not committed")
	case len(results) == 1 && bad == 1:
		return fmt.Errorf("%d problems in %s", len(results[0].Problems), results[0].Location)
	case notCommitted+bad > 0:
		return fmt.Errorf("%d of %d partitions not verified: %d not committed, %d with problems", notCommitted+bad, len(results), notCommitted, bad)
	}
	return nil
}
