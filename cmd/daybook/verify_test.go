package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/upload"
)

// commitPartition writes a committed Parquet partition of ds (one file of
// rows rows) as the exporter would: data, _manifest.json, _SUCCESS.
func commitPartition(t *testing.T, api *s3.Client, bkt, prefix string, ds dataset.Dataset, day civil.Date, rows int) {
	t.Helper()
	commitTo(t, bucket.New(api, bkt, bucket.Options{}), prefix, ds, day, rows)
}

// commitTo is commitPartition in b, on any store.
func commitTo(t *testing.T, b *bucket.Bucket, prefix string, ds dataset.Dataset, day civil.Date, rows int) {
	t.Helper()
	ctx := t.Context()
	put := func(key string, body []byte) {
		if err := b.Put(ctx, key, body, ""); err != nil {
			t.Fatal(err)
		}
	}
	format := fileformat.Parquet
	m := &manifest.Manifest{FormatVersion: manifest.FormatVersion, Contract: layout.Version, AccountID: "acct_verifytest", Dataset: ds.Name,
		SchemaVersion: ds.Version, Day: day.String(), Partition: ds.Partition, Mode: ds.Mode, Read: ds.Read, Generation: 1,
		RunID: "run_1", Reason: "scheduled", Format: string(format), Compression: string(format.DefaultCodec()), Schema: manifest.SchemaOf(ds)}
	key := layout.DataKey(prefix, ds.LedgerName(), day, 0, format.Extension())
	w := b.NewWriter(ctx, key, upload.Options{ContentType: format.ContentType()})
	enc, err := encode.New(format, w, ds, encode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range datasettest.Varied(ds, rows) {
		if err := enc.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := w.Result()
	m.Files = append(m.Files, manifest.File{Key: key, Rows: enc.Rows(), Bytes: r.Bytes, CRC32C: r.CRC32C, SHA256: r.SHA256})
	m.Sum()
	body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pp := layout.PartitionPrefix(prefix, ds.LedgerName(), day)
	put(pp+layout.ManifestName, body)
	put(pp+layout.SuccessName, manifest.NewSuccess(m.Generation, m.RunID, pp+layout.ManifestName, body, time.Unix(0, 0)).Encode())
}

// readmeVerifyCommand is the verify command line the bucket README gives
// the customer, its placeholders filled in and its optional flags chosen.
func readmeVerifyCommand(t *testing.T, in bucketdocs.Input, fill map[string]string) []string {
	t.Helper()
	files, err := bucketdocs.Files(in)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(files[len(files)-1].Body)
	for _, f := range files {
		if strings.HasSuffix(f.Key, "README.md") {
			readme = string(f.Body)
		}
	}
	i := strings.Index(readme, "daybook verify --bucket")
	if i < 0 {
		t.Fatalf("the bucket README gives no verify command:\n%s", readme)
	}
	if !strings.Contains(readme, "go install github.com/daybook-dev/daybook/cmd/daybook@latest") {
		t.Error("the bucket README does not say how to install daybook")
	}
	line := readme[i:]
	line = line[:strings.Index(line, "\n```")]
	line = strings.ReplaceAll(line, "\\\n", " ")
	for k, v := range fill {
		line = strings.ReplaceAll(line, k, v)
	}
	var args []string
	for _, f := range strings.Fields(line)[1:] {
		if f = strings.Trim(f, "[]"); f != "" {
			args = append(args, f)
		}
	}
	return args
}

// TestCustomerVerifyAsTheBucketREADMESays runs the verify command the
// bucket README gives, as written, against the emulated bucket: with read
// access alone and no deployment, it verifies a committed day and says 1 for
// a day that is not.
func TestCustomerVerifyAsTheBucketREADMESays(t *testing.T) {
	s := deployed(t)
	bkt := fmt.Sprintf("verify-readme-%d", nameSeq.Add(1))
	s.createBucket(t, bkt)
	api := awsclient.NewS3(s.cfg)
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "daybook/acct_verifytest"
	day := civil.MustParse("2026-11-20")
	commitPartition(t, api, bkt, prefix, ds, day, 40)
	in := bucketdocs.Input{Bucket: bkt, Prefix: prefix, Format: fileformat.Parquet, TimeZone: "UTC", Datasets: []dataset.Dataset{ds}}

	a, _, _ := testApp(t)
	// The customer's own credentials: moto's, through no deployment.
	a.awsConfig = func(context.Context, string, string) (aws.Config, error) {
		c := s.cfg.Copy()
		c.BaseEndpoint = nil
		return c, nil
	}
	fill := map[string]string{"<dataset>": "events", "YYYY-MM-DD": day.String(), "--region <region>": "--region us-east-1", "<url>": srv.URL}
	args := readmeVerifyCommand(t, in, fill)
	r := execute(t, a, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "OK, generation 1, 1 files, 40 rows match the manifest") {
		t.Errorf("%q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "using") {
		t.Errorf("the customer's verify opened a deployment: %s", r.stderr)
	}

	fill["YYYY-MM-DD"] = "2026-11-21"
	r = execute(t, a, readmeVerifyCommand(t, in, fill)...)
	if r.code != cli.ExitError || !strings.Contains(r.stdout, "no _SUCCESS") {
		t.Errorf("a day not delivered: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Without --dataset, a range: every dataset folder under the prefix.
	r = execute(t, a, "verify", "--bucket", bkt, "--prefix", prefix, "--endpoint", srv.URL, "--from", "2026-11-20", "--to", "2026-11-21")
	if r.code != cli.ExitError || !strings.Contains(r.stdout, "2 partitions: 1 OK, 1 not committed, 0 with problems") {
		t.Errorf("a range of every dataset: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestCustomerVerifyOnGCSAndAzure: the customer's verify reads a
// partition on Google Cloud Storage (gs://BUCKET) and on Azure
// (az://ACCOUNT/CONTAINER, and the abfss:// URI daybook prints), here on
// their emulators (--endpoint), with no deployment.
func TestCustomerVerifyOnGCSAndAzure(t *testing.T) {
	t.Parallel()
	fgcs := servertest.ForTest(t, gcsserver.Start)
	azr := servertest.ForTest(t, azurite.Start)
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "daybook/acct_verifytest"
	day := civil.MustParse("2026-11-20")
	name := fmt.Sprintf("verify-stores-%d", nameSeq.Add(1))

	gc, err := gcs.NewClient(t.Context(), gcs.Config{Endpoint: gcsserver.Endpoint(fgcs)})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if err := buckettest.GCSCreateBucket(t.Context(), fgcs, name); err != nil {
		t.Fatal(err)
	}
	commitTo(t, gcs.New(gc, name, gcs.Options{}), prefix, ds, day, 40)

	ac, err := buckettest.AzuriteClient(azr, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	commitTo(t, azure.New(ac, name, azure.Options{Account: azurite.Account}), prefix, ds, day, 40)

	for _, tc := range []struct {
		bucket, endpoint, location string
	}{
		{"gs://" + name, fgcs.URL, "gs://" + name + "/"},
		{"az://" + azurite.Account + "/" + name, azr.URL, "abfss://" + name + "@" + azurite.Account + ".dfs.core.windows.net/"},
		{"abfss://" + name + "@" + azurite.Account + ".dfs.core.windows.net", azr.URL, "abfss://"},
	} {
		for _, download := range []bool{false, true} {
			a, _, _ := testApp(t)
			args := []string{"verify", "--bucket", tc.bucket, "--endpoint", tc.endpoint, "--prefix", prefix, "--dataset", "events", "--day", day.String()}
			if download {
				args = append(args, "--download")
			}
			r := execute(t, a, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "OK, generation 1, 1 files, 40 rows match the manifest") || !strings.Contains(r.stdout, tc.location) {
				t.Errorf("%q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
			}
		}
	}
}

// TestVerifyBothContracts: with --bucket, verify checks v1/events/ and
// v2/events/ as the help says: --dataset events.v2 is the v2 folder, and
// without --dataset both folders are checked.
func TestVerifyBothContracts(t *testing.T) {
	s := deployed(t)
	bkt := fmt.Sprintf("verify-contracts-%d", nameSeq.Add(1))
	s.createBucket(t, bkt)
	api := awsclient.NewS3(s.cfg)
	v1, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	v2 := v1
	v2.Contract = "v2"
	const prefix = "daybook/acct_verifytest"
	day := civil.MustParse("2026-11-20")
	commitPartition(t, api, bkt, prefix, v1, day, 40)
	commitPartition(t, api, bkt, prefix, v2, day, 25)
	a, _, _ := testApp(t)
	a.awsConfig = func(context.Context, string, string) (aws.Config, error) {
		c := s.cfg.Copy()
		c.BaseEndpoint = nil
		return c, nil
	}
	base := []string{"verify", "--bucket", bkt, "--prefix", prefix, "--endpoint", srv.URL}
	for _, c := range []struct {
		ds, want string
	}{{"events.v2", "25 rows match the manifest"}, {"events", "40 rows match the manifest"}} {
		r := execute(t, a, append(base, "--dataset", c.ds, "--day", day.String())...)
		if r.code != 0 || !strings.Contains(r.stdout, c.want) {
			t.Errorf("--dataset %s: exit %d\n%s%s", c.ds, r.code, r.stdout, r.stderr)
		}
	}
	r := execute(t, a, append(base, "--from", day.String(), "--to", day.String())...)
	if r.code != 0 || !strings.Contains(r.stdout, "2 partitions: 2 OK") || !strings.Contains(r.stdout, "events.v2  2026-11-20  OK") {
		t.Errorf("every folder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestVerifyRefusesMixedForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--account", "acct_x", "--bucket", "b", "--day", "2026-11-20"}, "give --account or --bucket, not both"},
		{[]string{"--day", "2026-11-20"}, "--account (an account of the deployment) or --bucket and --prefix"},
		{[]string{"--bucket", "b", "--day", "2026-11-20"}, "--prefix is required with --bucket"},
		{[]string{"--account", "acct_x", "--download", "--day", "2026-11-20"}, "go with --bucket"},
		{[]string{"--bucket", "b", "--prefix", "p", "--endpoint", "nope", "--day", "2026-11-20"}, `--endpoint "nope": not a URL`},
		{[]string{"--bucket", "az://acme", "--prefix", "p", "--day", "2026-11-20"}, `--bucket "az://acme": want az://ACCOUNT/CONTAINER`},
		{[]string{"--bucket", "gs://a/b", "--prefix", "p", "--day", "2026-11-20"}, `--bucket "gs://a/b": want gs://BUCKET`},
	}
	for _, tt := range tests {
		a, _, _ := testApp(t)
		r := execute(t, a, append([]string{"verify"}, tt.args...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("verify %q: exit %d, stderr %q, want %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestVerifySnapshotOlderDays: a snapshot dataset's copy is taken for the
// newest closed day only, so its older days have no _SUCCESS by design.
// verify --from --to counts them "latest only", not "not committed", and
// exits 0: in the customer's form because the day's delivery manifest
// lists the dataset in datasets_latest_only, in the operator's form also
// without a delivery manifest (an account whose datasets are all
// snapshots), from the catalog and the account's newest closed day. On the
// old code both exited 1.
func TestVerifySnapshotOlderDays(t *testing.T) {
	cat := datasettest.Catalog(t, append(example.YAML(), `
  - name: members
    version: 1
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    columns:
      - {name: email, type: string}
      - {name: attributes, type: json, nullable: true}
`...))
	s := deployed(t)
	s.catalog = cat
	api := awsclient.NewS3(s.cfg)
	events, _ := cat.Get("events")
	members, _ := cat.Get("members")

	// The customer's form.
	bkt := fmt.Sprintf("verify-snapshot-%d", nameSeq.Add(1))
	s.createBucket(t, bkt)
	const prefix = "daybook/acct_verifytest"
	d1, d2 := civil.MustParse("2026-11-20"), civil.MustParse("2026-11-21")
	for _, d := range []civil.Date{d1, d2} {
		commitPartition(t, api, bkt, prefix, events, d, 10)
	}
	commitPartition(t, api, bkt, prefix, members, d2, 3)
	for _, d := range []civil.Date{d1, d2} {
		sts := []manifest.PartitionStatus{
			{Name: "events", Dataset: &events, Exists: true, State: "completed", Generation: 1},
			{Name: "members", Dataset: &members, Exists: d == d2, State: "completed", Generation: 1, LatestOnly: d == d1},
		}
		body, err := manifest.NewDelivery("acct_verifytest", d.String(), sts, testNow).Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bkt, Key: aws.String(layout.DeliveryManifestKey(prefix, d)), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	a, _, _ := testApp(t)
	a.catalog = cat
	a.awsConfig = func(context.Context, string, string) (aws.Config, error) {
		c := s.cfg.Copy()
		c.BaseEndpoint = nil
		return c, nil
	}
	r := execute(t, a, "verify", "--bucket", bkt, "--prefix", prefix, "--endpoint", srv.URL, "--from", d1.String(), "--to", d2.String())
	if r.code != 0 || !strings.Contains(r.stdout, "4 partitions: 3 OK, 0 not committed, 0 with problems, 1 latest only") ||
		!strings.Contains(r.stdout, "members  2026-11-20  latest only") {
		t.Errorf("the customer's form: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = execute(t, a, "verify", "--bucket", bkt, "--prefix", prefix, "--endpoint", srv.URL, "--dataset", "members", "--day", d1.String())
	if r.code != 0 || !strings.Contains(r.stdout, "no copy of this day by design") {
		t.Errorf("one latest-only day: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The operator's form, on an account whose one dataset is a snapshot:
	// no delivery manifest at all.
	acct := s.newAccount(t, map[string]any{"datasets": []string{"members"}})
	newest := civil.MustParse("2026-11-29") // at testNow, noon UTC, with any settle delay under 12 hours
	p, err := acct.Prefix("clitest")
	if err != nil {
		t.Fatal(err)
	}
	commitPartition(t, api, acct.Destination.Bucket, p, members, newest, 3)
	a, _, _ = testApp(t)
	r = s.run(t, a, "verify", "--account", acct.ID, "--from", newest.AddDays(-2).String(), "--to", newest.String())
	if r.code != 0 || !strings.Contains(r.stdout, "3 partitions: 1 OK, 0 not committed, 0 with problems, 2 latest only") {
		t.Errorf("the operator's form: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The newest closed day without its copy is not committed.
	r = s.run(t, a, "verify", "--account", acct.ID, "--dataset", "members", "--day", newest.AddDays(1).String())
	if r.code != cli.ExitError || !strings.Contains(r.stdout, "no _SUCCESS") {
		t.Errorf("a day after the newest closed day: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestVerifyTheWaysCustomersNameTheirBucket: the prefix copied from the
// bucket README's Location line (ending in /v1/) is the prefix before it
// (it looked under v1/v1/ and said "not exported yet"); the day's delivery
// manifest is reported as the README says; a bucket that does not exist is
// said in words, without the SDK's request ids.
func TestVerifyTheWaysCustomersNameTheirBucket(t *testing.T) {
	s := deployed(t)
	bkt := fmt.Sprintf("verify-forms-%d", nameSeq.Add(1))
	s.createBucket(t, bkt)
	api := awsclient.NewS3(s.cfg)
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "daybook/acct_verifyforms"
	day := civil.MustParse("2026-11-20")
	commitPartition(t, api, bkt, prefix, ds, day, 40)
	d := manifest.Delivery{FormatVersion: manifest.DeliveryFormatVersion, Contract: layout.Version, AccountID: "acct_verifyforms", Day: day.String(), Complete: true,
		DatasetsDelivered: []manifest.DeliveredDataset{{Name: "events", Contract: layout.Version, Generation: 1, Rows: 40, Files: 1}}, DatasetsMissing: []manifest.MissingDataset{}}
	body, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bkt), Key: aws.String(layout.DeliveryManifestKey(prefix, day)), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	a, _, _ := testApp(t)
	a.awsConfig = func(context.Context, string, string) (aws.Config, error) {
		c := s.cfg.Copy()
		c.BaseEndpoint = nil
		return c, nil
	}
	for _, p := range []string{prefix, prefix + "/v1", prefix + "/v1/"} {
		r := execute(t, a, "verify", "--bucket", bkt, "--prefix", p, "--endpoint", srv.URL, "--dataset", "events", "--day", day.String())
		if r.code != 0 || !strings.Contains(r.stdout, "OK, generation 1, 1 files, 40 rows match the manifest") ||
			!strings.Contains(r.stdout, "delivery manifest: delivered, generation 1, 40 rows (day complete)") {
			t.Errorf("--prefix %s: exit %d\n%s%s", p, r.code, r.stdout, r.stderr)
		}
		if note := "ends in the contract folder v1/: reading the prefix " + prefix; strings.HasSuffix(strings.TrimSuffix(p, "/"), "/v1") != strings.Contains(r.stderr, note) {
			t.Errorf("--prefix %s: stderr %q", p, r.stderr)
		}
	}
	r := execute(t, a, "verify", "--bucket", bkt, "--prefix", prefix, "--endpoint", srv.URL, "--from", "2026-11-20", "--to", "2026-11-21", "-o", "json")
	if !strings.Contains(r.stdout, `"delivery": "delivered, generation 1, 40 rows (day complete)"`) || !strings.Contains(r.stdout, `"delivery": "none for 2026-11-21 yet"`) {
		t.Errorf("-o json lacks the delivery manifest's view:\n%s", r.stdout)
	}
	r = execute(t, a, "verify", "--bucket", "no-such-bucket-"+bkt, "--prefix", prefix, "--endpoint", srv.URL, "--day", day.String())
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "the bucket no-such-bucket-"+bkt+" does not exist (check --bucket)") ||
		strings.Contains(r.stderr, "RequestID") || strings.Contains(r.stderr, "api error") {
		t.Errorf("a bucket that does not exist: exit %d\n%s", r.code, r.stderr)
	}
}
