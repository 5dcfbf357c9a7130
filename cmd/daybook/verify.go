package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/verify"
)

// verified is one partition's verification, for output.
type verified struct {
	Dataset   string `json:"dataset"`
	Day       string `json:"day"`
	Location  string `json:"location"`
	Committed bool   `json:"committed"`
	OK        bool   `json:"ok"`
	// LatestOnly: a snapshot dataset's older day, which has no copy by
	// design (verify.StatusLatestOnly); not a failure.
	LatestOnly bool     `json:"latest_only,omitempty"`
	Generation int64    `json:"generation,omitempty"`
	Files      int      `json:"files,omitempty"`
	Rows       int64    `json:"rows,omitempty"`
	Problems   []string `json:"problems,omitempty"`
	// Delivery is what the day's delivery manifest says about the dataset.
	Delivery string `json:"delivery,omitempty"`
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
	a.registerPartitionFlags(c, &p.partitionFlags, true)
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
			if _, err := a.datasetFlag(c, p.dataset); err != nil {
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
	reader verify.Reader
	// kind is the bucket's store, for what an error says to grant.
	kind     account.StoreKind
	target   verify.Target // Bucket and Prefix
	datasets []string
	opts     verify.Options
	// current: the names are the catalog's datasets, checked under their
	// current contract (--account); otherwise a bare name is the v1 folder
	// and events.v2 the v2 one, as the bucket shows them.
	current bool
	// newest is the account's newest closed day (--account): a snapshot
	// dataset's copy is taken for it only (verify.Options.LatestOnlyBefore).
	newest civil.Date
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
	return verifySource{reader: b, kind: acct.Destination.Kind(), target: verify.Target{Bucket: acct.Destination.Bucket, Prefix: prefix},
		datasets: acct.Datasets, opts: verify.Options{Download: true}, current: true,
		newest: acct.WithDefaults(e.settle).ClosedThrough(a.now())}, nil
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
	datasets, err := verify.Datasets(ctx, b, t)
	if err != nil {
		return verifySource{}, readError(b, loc.kind, t, err)
	}
	// The bucket README's Location ends in the contract folder (/v1/): a
	// prefix copied from it names that folder, which holds no contract
	// folders of its own. The prefix is then the part before it.
	if parent, last := path.Split(prefix); len(datasets) == 0 && parent != "" && contractFolder.MatchString(last) {
		up := verify.Target{Bucket: loc.bucket, Prefix: strings.TrimSuffix(parent, "/")}
		if found, err := verify.Datasets(ctx, b, up); err == nil && len(found) > 0 {
			fmt.Fprintf(a.stderr, "daybook: --prefix %s ends in the contract folder %s/: reading the prefix %s (the part before /%s/)\n", p.prefix, last, up.Prefix, last)
			t, datasets = up, found
		}
	}
	src := verifySource{reader: b, kind: loc.kind, target: t, opts: verify.Options{Download: p.download}}
	if p.dataset == "" {
		src.datasets = datasets
		if len(src.datasets) == 0 {
			return verifySource{}, fmt.Errorf("%s: no dataset folders (is --prefix right? it is the part of every key before /v1/)", b.URI(layout.ContractPrefix(t.Prefix)))
		}
	}
	return src, nil
}

// contractFolder is a contract's folder name (v1, v2, ...).
var contractFolder = regexp.MustCompile(`^v[1-9][0-9]*$`)

// readError says in words why the bucket could not be read: no such
// bucket, another region (S3), access denied, naming what the reader's
// credentials need on the bucket's store; other errors as they are.
func readError(r verify.Reader, kind account.StoreKind, t verify.Target, err error) error {
	where := r.URI(layout.ContractPrefix(t.Prefix))
	var ae smithy.APIError
	switch err = bucket.Classify(err); {
	case errors.Is(err, bucket.ErrNoSuchBucket):
		return fmt.Errorf("%s: the bucket %s does not exist (check --bucket)", where, t.Bucket)
	case kind == account.StoreS3 && errors.As(err, &ae) && (ae.ErrorCode() == "PermanentRedirect" || ae.ErrorCode() == "AuthorizationHeaderMalformed" || ae.ErrorCode() == "IllegalLocationConstraintException"):
		return fmt.Errorf("%s: the bucket %s is in another region than the one asked: pass its region with --region", where, t.Bucket)
	case errors.Is(err, bucket.ErrAccessDenied):
		return fmt.Errorf("%s: access denied: %s", where, readNeeds(kind, t))
	}
	return err
}

// readNeeds is what a reader's credentials need on the bucket, per store
// (the bucket README's read-only access for each).
func readNeeds(kind account.StoreKind, t verify.Target) string {
	switch kind {
	case account.StoreGCS:
		return fmt.Sprintf("your credentials need storage.objects.list and storage.objects.get on the bucket %s (roles/storage.objectViewer, the bucket README's grant)", t.Bucket)
	case account.StoreAzure:
		return fmt.Sprintf("your identity needs Storage Blob Data Reader on the container %s (the bucket README's role assignment)", t.Bucket)
	}
	return fmt.Sprintf("your credentials need s3:ListBucket on the bucket %s (prefix %s) and s3:GetObject under it (the bucket README's policy), and --region if the bucket is elsewhere", t.Bucket, layout.ContractPrefix(t.Prefix))
}

// verifyDays checks every day from..to of each dataset (only that one when
// set) and prints the results.
func (a *app) verifyDays(ctx context.Context, src verifySource, only string, from, to civil.Date, out outputFormat) error {
	datasets := src.datasets
	if only != "" {
		datasets = []string{only}
	}
	days := civil.Range(from, to)
	bar := a.progress(len(days)*len(datasets), "verify")
	var results []verified
	for _, ds := range datasets {
		opts := src.opts
		if src.current {
			if d, err := a.catalog.Get(ds); err == nil && d.IsSnapshot() {
				opts.LatestOnlyBefore = src.newest
			}
			ds = a.catalog.Current(ds) // its tree under the contract delivered now
		}
		for _, d := range days {
			t := src.target
			t.Dataset, t.Day = ds, d
			r, err := verify.Check(ctx, src.reader, t, opts)
			if err != nil {
				bar.Finish()
				return fmt.Errorf("verify %s: %w", src.reader.URI(t.PartitionPrefix()), readError(src.reader, src.kind, t, err))
			}
			results = append(results, verified{Dataset: ds, Day: d.String(), Location: r.Location, Committed: r.Committed(), OK: r.Status == verify.StatusOK,
				LatestOnly: r.Status == verify.StatusLatestOnly, Generation: r.Generation, Files: r.Files, Rows: r.Rows, Problems: r.Problems(), Delivery: r.Delivery()})
			bar.Add(1)
		}
	}
	bar.Finish()
	return a.printVerified(out, results)
}

func (a *app) printVerified(out outputFormat, results []verified) error {
	var notCommitted, bad, latestOnly int
	for _, r := range results {
		switch {
		case r.LatestOnly:
			latestOnly++
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
		case r.LatestOnly:
			fmt.Fprintf(a.stdout, "%s: no copy of this day by design (a snapshot dataset is copied for the newest closed day only): read its latest day with _SUCCESS\n", r.Location)
		case !r.Committed:
			fmt.Fprintf(a.stdout, "%s: no _SUCCESS (not exported yet, in progress, or failed)\n", r.Location)
		case r.OK:
			fmt.Fprintf(a.stdout, "%s: OK, generation %d, %d files, %d rows match the manifest\n", r.Location, r.Generation, r.Files, r.Rows)
		}
		if r.Delivery != "" {
			fmt.Fprintf(a.stdout, "delivery manifest: %s\n", printable(r.Delivery))
		}
		for _, p := range r.Problems {
			fmt.Fprintln(a.stdout, "PROBLEM:", printable(fmt.Sprint(p)))
		}
	} else {
		tw := newTable(a.stdout)
		tw.header("DATASET\tDAY\tRESULT\tGENERATION\tFILES\tROWS\tDELIVERY MANIFEST")
		for _, r := range results {
			res := "OK"
			switch {
			case r.LatestOnly:
				res = "latest only"
			case !r.Committed:
				res = "not committed"
			case !r.OK:
				res = fmt.Sprintf("%d problems", len(r.Problems))
			}
			tw.row(r.Dataset, r.Day, res, r.Generation, r.Files, r.Rows, r.Delivery)
		}
		tw.Flush()
		for _, r := range results {
			for _, p := range r.Problems {
				fmt.Fprintf(a.stdout, "PROBLEM: %s %s: %s\n", r.Dataset, r.Day, printable(fmt.Sprint(p)))
			}
		}
		only := ""
		if latestOnly > 0 {
			only = fmt.Sprintf(", %d latest only (snapshot datasets, copied for the newest closed day only)", latestOnly)
		}
		fmt.Fprintf(a.stdout, "%d partitions: %d OK, %d not committed, %d with problems%s\n", len(results), len(results)-notCommitted-bad-latestOnly, notCommitted, bad, only)
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
