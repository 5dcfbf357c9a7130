package account

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/layout"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/envvar"
)

const deployment = "111122223333"

// testRules are a deployment's rules: its account, its customer role
// pattern, its stage.
var testRules = Rules{DeploymentAccountID: deployment, RolePattern: "arn:aws:iam::*:role/daybook-export-*"}

// wantField fails unless err holds a *FieldError for field with value whose
// message contains reason.
func wantField(t *testing.T, err error, field, value, reason string) {
	t.Helper()
	for _, fe := range Fields(err) {
		if fe.Field == field && fe.Value == value && strings.Contains(fe.Error(), reason) {
			if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), `"`+value+`"`) {
				t.Errorf("error %q does not name %s %q", err, field, value)
			}
			return
		}
	}
	t.Errorf("error %v: want a FieldError %s %q containing %q", err, field, value, reason)
}

func roleDest() Destination {
	return Destination{Bucket: "acme-exports", RoleARN: "arn:aws:iam::123456789012:role/daybook-export-acme", ExternalID: "ext-1"}
}

// longestSuffix is how far the longest key daybook writes for the test
// account's datasets reaches past its rendered prefix ("/" included).
var longestSuffix = len(layout.LongestKey("x", valid().Datasets)) - len("x")

func TestValidateAcceptsValid(t *testing.T) {
	t.Parallel()
	if err := valid().Validate(datasettest.Example(t), testRules); err != nil {
		t.Fatalf("valid account: %v", err)
	}
	// Prefixes whose longest key is exactly 1,024 bytes (with the longest stage).
	for _, prefix := range []string{
		strings.Repeat("p", 1024-longestSuffix-len("/acct_abcdefghijklmnop")) + "/{{.AccountID}}",
		strings.Repeat("p", 1024-longestSuffix-len("/ssssssssssssssss/acct_abcdefghijklmnop")) + "/{{.Stage}}/{{.AccountID}}",
	} {
		a := valid()
		a.Destination.Prefix = prefix
		if err := a.Validate(datasettest.Example(t), testRules); err != nil {
			t.Errorf("a prefix at the key limit: %v", err)
		}
	}
	full := valid()
	full.TimeZone = "America/Sao_Paulo"
	full.SourceShard = "01"
	full.Destination = Destination{Bucket: "acme-exports", Region: "eu-west-1", Prefix: "{{.Stage}}/exports!_(x).v-1/{{.AccountID}}/",
		RoleARN: "arn:aws:iam::123456789012:role/daybook-export-acme", ExternalID: "ext-1_+=,.@:/-", ExpectedBucketOwner: "444455556666",
		Format: "ndjson", Compression: "gzip"}
	if err := full.Validate(datasettest.Example(t), testRules); err != nil {
		t.Errorf("full account: %v", err)
	}
	ice := valid()
	ice.Destination.TableFormat = TableFormatIceberg
	if err := ice.Validate(datasettest.Example(t), testRules); err != nil {
		t.Errorf("an Iceberg table: %v", err)
	}
	for _, ep := range []string{"https://minio.example.com", "https://minio.example.com:9000/", "http://127.0.0.1:9000", "http://localhost:4566",
		"http://[::1]:9000", "https://203.0.113.7", "https://r2-0.example.cloudflarestorage.com"} {
		a := valid()
		a.Destination.Endpoint = ep
		if err := a.Validate(datasettest.Example(t), testRules); err != nil {
			t.Errorf("endpoint %s: %v", ep, err)
		}
	}
	private := valid()
	private.Destination.Endpoint = "https://10.1.2.3:9000"
	r := testRules
	r.AllowPrivateEndpoints = true
	if err := private.Validate(datasettest.Example(t), r); err != nil {
		t.Errorf("a private endpoint where they are allowed: %v", err)
	}
	// The zero Rules: no role pattern; daybook's own role needs an explicit owner.
	zero := valid()
	zero.Destination.ExpectedBucketOwner = deployment
	if err := zero.Validate(datasettest.Example(t), Rules{}); err != nil {
		t.Errorf("zero rules, own role with an owner: %v", err)
	}
	withRole := valid()
	withRole.Destination = roleDest()
	withRole.Destination.RoleARN = "arn:aws:iam::123456789012:role/anything"
	if err := withRole.Validate(datasettest.Example(t), Rules{}); err != nil {
		t.Errorf("zero rules, any role: %v", err)
	}
}

// TestValidateRefuses: one row per refusal; each names the field and the
// value, as a *FieldError.
func TestValidateRefuses(t *testing.T) {
	t.Parallel()
	// The longest key here is the change log's entry of a profiles day
	// (<prefix>/v1/_changes/<time>_profiles_<day>_<generation>.json):
	// longestSuffix bytes after the prefix.
	fits := strings.Repeat("p", 1024-longestSuffix-len("/acct_abcdefghijklmnop")) + "/{{.AccountID}}"
	long := "p" + fits
	fitsStage := strings.Repeat("p", 1024-longestSuffix-len("/ssssssssssssssss/acct_abcdefghijklmnop")) + "/{{.Stage}}/{{.AccountID}}"
	cases := []struct {
		name          string
		mut           func(*Account, *Rules)
		field, value  string
		reason        string
		validateShape bool // ValidateShape refuses it too
	}{
		{"id", func(a *Account, _ *Rules) { a.ID = "42" }, "id", "42", "acct_", true},
		{"zone", func(a *Account, _ *Rules) { a.TimeZone = "Mars/Olympus" }, "time_zone", "Mars/Olympus", "IANA", true},
		{"local zone", func(a *Account, _ *Rules) { a.TimeZone = "Local" }, "time_zone", "Local", "IANA", true},
		{"settle", func(a *Account, _ *Rules) { d := Duration(-time.Hour); a.SettleDelay = &d }, "settle_delay", "-1h0m0s", "between 0 and 168h", true},
		{"source shard", func(a *Account, _ *Rules) { a.SourceShard = "EU-2" }, "source_shard", "EU-2", "lower case letters, digits and _", true},
		{"source shard with a double underscore", func(a *Account, _ *Rules) { a.SourceShard = "eu__2" }, "source_shard", "eu__2", "no double underscore", true},
		{"no start", func(a *Account, _ *Rules) { a.StartDate = civil.Date{} }, "start_date", "", "required", true},
		{"bucket", func(a *Account, _ *Rules) { a.Destination.Bucket = "Bad_Bucket" }, "destination.bucket", "Bad_Bucket", "not an S3 bucket name", true},
		{"region", func(a *Account, _ *Rules) { a.Destination.Region = "eu-west-1.evil.com#" }, "destination.region", "eu-west-1.evil.com#", "not a region", true},
		{"format", func(a *Account, _ *Rules) { a.Destination.Format = "csv" }, "destination.format", "csv", "parquet or ndjson", true},
		{"parquet gzip", func(a *Account, _ *Rules) { a.Destination.Compression = "gzip" }, "destination.compression", "gzip", "parquet takes", true},
		{"checksums", func(a *Account, _ *Rules) { a.Destination.Checksums = "md5" }, "destination.checksums", "md5", "full_object", true},
		{"parquet profile", func(a *Account, _ *Rules) { a.Destination.ParquetProfile = "v2" }, "destination.parquet_profile", "v2", "compatible (the default) or compact", true},
		{"profile of ndjson", func(a *Account, _ *Rules) {
			a.Destination.Format, a.Destination.Compression, a.Destination.ParquetProfile = "ndjson", "", "compact"
		}, "destination.parquet_profile", "compact", "parquet only", true},
		{"table format", func(a *Account, _ *Rules) { a.Destination.TableFormat = "delta" }, "destination.table_format", "delta", "want iceberg", true},
		{"iceberg of ndjson", func(a *Account, _ *Rules) {
			a.Destination.Format, a.Destination.Compression, a.Destination.TableFormat = "ndjson", "", "iceberg"
		}, "destination.table_format", "iceberg", "needs parquet files, and the format is ndjson", true},
		{"iceberg off UTC", func(a *Account, _ *Rules) { a.Destination.TableFormat, a.TimeZone = "iceberg", "Europe/Paris" },
			"destination.table_format", "iceberg", "UTC day, and time_zone is Europe/Paris", true},
		{"glue without a table", func(a *Account, _ *Rules) { a.Destination.Glue = &GlueTables{Database: "analytics"} },
			"destination.glue.database", "analytics", `registers the Iceberg tables, and table_format is ""`, true},
		{"glue database name", func(a *Account, _ *Rules) {
			a.Destination.TableFormat, a.Destination.Glue = "iceberg", &GlueTables{Database: "Analytics-1"}
		}, "destination.glue.database", "Analytics-1", "lowercase letters, digits and underscores", true},
		{"glue table prefix", func(a *Account, _ *Rules) {
			a.Destination.TableFormat, a.Destination.Glue = "iceberg", &GlueTables{Database: "analytics", TablePrefix: "acme."}
		}, "destination.glue.table_prefix", "acme.", "lowercase letters", true},
		{"glue at a custom endpoint", func(a *Account, _ *Rules) {
			a.Destination.TableFormat, a.Destination.Endpoint = "iceberg", "https://minio.example.com"
			a.Destination.Glue = &GlueTables{Database: "analytics"}
		}, "destination.glue.database", "analytics", "custom endpoint https://minio.example.com", true},

		// Datasets against the catalog (6).
		{"no datasets", func(a *Account, _ *Rules) { a.Datasets = nil }, "datasets", "", "at least one", true},
		{"bad dataset name", func(a *Account, _ *Rules) { a.Datasets = []string{"Events!"} }, "datasets", "Events!", "not a dataset name", true},
		{"unknown dataset", func(a *Account, _ *Rules) { a.Datasets = []string{"events", "visitors"} }, "datasets", "visitors",
			"unknown dataset (known: events, profiles, daily_stats)", true},
		{"dataset twice", func(a *Account, _ *Rules) { a.Datasets = []string{"events", "profiles", "events"} }, "datasets", "events", "listed twice", true},

		// The prefix (1).
		{"prefix placeholder", func(a *Account, _ *Rules) { a.Destination.Prefix = "x/{{.Tenant}}/{{.AccountID}}" }, "destination.prefix", "x/{{.Tenant}}/{{.AccountID}}",
			"unknown placeholder {{.Tenant}}", true},
		{"prefix dotdot", func(a *Account, _ *Rules) { a.Destination.Prefix = "x/../{{.AccountID}}" }, "destination.prefix", "x/../{{.AccountID}}", `".."`, true},
		{"prefix without the account id", func(a *Account, _ *Rules) { a.Destination.Prefix = "shared/exports" }, "destination.prefix", "shared/exports",
			"must contain {{.AccountID}} as a whole segment", true},
		{"account id inside a segment", func(a *Account, _ *Rules) { a.Destination.Prefix = "exports/x{{.AccountID}}" }, "destination.prefix", "exports/x{{.AccountID}}",
			"must be a whole segment", true},
		{"prefix character", func(a *Account, _ *Rules) { a.Destination.Prefix = "ex ports/{{.AccountID}}" }, "destination.prefix", "ex ports/{{.AccountID}}", "character ' '", true},
		{"prefix wildcard", func(a *Account, _ *Rules) { a.Destination.Prefix = "ex*/{{.AccountID}}" }, "destination.prefix", "ex*/{{.AccountID}}", "character '*'", true},
		{"prefix too long", func(a *Account, _ *Rules) { a.Destination.Prefix = long }, "destination.prefix", long,
			"is 1025 bytes; S3 keys are at most 1024 bytes: shorten the prefix by 1", true},
		{"prefix too long with the longest stage", func(a *Account, r *Rules) { a.Destination.Prefix = "p" + fitsStage }, "destination.prefix", "p" + fitsStage,
			"rendered as", true},

		// Role and external id (4).
		{"role arn", func(a *Account, _ *Rules) {
			a.Destination = roleDest()
			a.Destination.RoleARN = "arn:aws:iam::12:role/x"
		}, "destination.role_arn", "arn:aws:iam::12:role/x",
			"want arn:aws:iam::<12-digit account>", true},
		{"role outside the pattern", func(a *Account, _ *Rules) {
			a.Destination = roleDest()
			a.Destination.RoleARN = "arn:aws:iam::123456789012:role/admin"
		}, "destination.role_arn", "arn:aws:iam::123456789012:role/admin", "outside the roles this deployment may assume (arn:aws:iam::*:role/daybook-export-*)", false},
		{"role in a path outside the pattern", func(a *Account, _ *Rules) {
			a.Destination = roleDest()
			a.Destination.RoleARN = "arn:aws:iam::123456789012:role/ops/daybook-export-x"
		}, "destination.role_arn", "arn:aws:iam::123456789012:role/ops/daybook-export-x", "outside the roles", false},
		{"role without external id", func(a *Account, _ *Rules) { a.Destination = roleDest(); a.Destination.ExternalID = "" }, "destination.external_id", "", "required with a role_arn", true},
		{"external id too short", func(a *Account, _ *Rules) { a.Destination = roleDest(); a.Destination.ExternalID = "e" }, "destination.external_id", "e", "2 to 1224", true},
		{"external id too long", func(a *Account, _ *Rules) {
			a.Destination = roleDest()
			a.Destination.ExternalID = strings.Repeat("x", 1225)
		}, "destination.external_id",
			strings.Repeat("x", 1225), "2 to 1224", true},
		{"external id with a space", func(a *Account, _ *Rules) { a.Destination = roleDest(); a.Destination.ExternalID = "acme corp" }, "destination.external_id", "acme corp", "2 to 1224", true},
		{"external id without role", func(a *Account, _ *Rules) { a.Destination.ExternalID = "ext-1" }, "destination.external_id", "ext-1", "without a role_arn", true},

		// The bucket owner (3).
		{"owner form", func(a *Account, _ *Rules) { a.Destination.ExpectedBucketOwner = "abc" }, "destination.expected_bucket_owner", "abc", "12-digit", true},
		{"own role, owner unknown", func(_ *Account, r *Rules) { r.DeploymentAccountID = "" }, "destination.expected_bucket_owner", "", "required: daybook's own role", false},
		{"own role, another account's bucket", func(a *Account, _ *Rules) { a.Destination.ExpectedBucketOwner = "999988887777" }, "destination.expected_bucket_owner", "999988887777",
			"only to buckets of the deployment's account 111122223333", false},
		{"deployment account id malformed", func(_ *Account, r *Rules) { r.DeploymentAccountID = "1111" }, "rules.deployment_account_id", "1111", "12-digit", false},

		// Custom endpoints (5).
		{"endpoint without scheme", func(a *Account, _ *Rules) { a.Destination.Endpoint = "minio:9000" }, "destination.endpoint", "minio:9000", "https://", true},
		{"endpoint ftp", func(a *Account, _ *Rules) { a.Destination.Endpoint = "ftp://minio.example.com" }, "destination.endpoint", "ftp://minio.example.com", "https://", true},
		{"endpoint http", func(a *Account, _ *Rules) { a.Destination.Endpoint = "http://minio.example.com" }, "destination.endpoint", "http://minio.example.com",
			"must be https://", true},
		{"endpoint metadata", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://169.254.169.254" }, "destination.endpoint", "https://169.254.169.254",
			"instance metadata", true},
		{"endpoint metadata over http", func(a *Account, _ *Rules) { a.Destination.Endpoint = "http://169.254.169.254/latest/" }, "destination.endpoint",
			"http://169.254.169.254/latest/", "no path", true},
		{"endpoint metadata IPv6", func(a *Account, r *Rules) {
			a.Destination.Endpoint = "https://[fd00:ec2::254]"
			r.AllowPrivateEndpoints = true
		}, "destination.endpoint",
			"https://[fd00:ec2::254]", "instance metadata", true},
		{"endpoint mapped metadata", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://[::ffff:169.254.169.254]" }, "destination.endpoint",
			"https://[::ffff:169.254.169.254]", "instance metadata", true},
		{"endpoint link-local", func(a *Account, r *Rules) {
			a.Destination.Endpoint = "https://169.254.10.1"
			r.AllowPrivateEndpoints = true
		}, "destination.endpoint",
			"https://169.254.10.1", "link-local", true},
		{"endpoint unspecified", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://0.0.0.0:9000" }, "destination.endpoint", "https://0.0.0.0:9000", "unspecified", true},
		{"endpoint multicast", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://224.0.0.1" }, "destination.endpoint", "https://224.0.0.1", "multicast", true},
		{"endpoint private", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://10.0.0.5:9000" }, "destination.endpoint", "https://10.0.0.5:9000", "private address", false},
		{"endpoint private IPv6", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://[fd12::1]" }, "destination.endpoint", "https://[fd12::1]", "private address", false},
		{"endpoint CGNAT", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://100.64.1.1" }, "destination.endpoint", "https://100.64.1.1", "carrier-grade NAT", false},
		{"endpoint numeric host", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://2852039166" }, "destination.endpoint", "https://2852039166",
			"neither a lowercase host name nor an IP address", true},
		{"endpoint hex host", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://0xa9fea9fe" }, "destination.endpoint", "https://0xa9fea9fe", "neither", true},
		{"endpoint user", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://user:pw@minio.example.com" }, "destination.endpoint",
			"https://user:pw@minio.example.com", "user or password", true},
		{"endpoint query", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://minio.example.com?x=1" }, "destination.endpoint", "https://minio.example.com?x=1", "no path, query", true},
		{"endpoint port", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://minio.example.com:99999" }, "destination.endpoint", "https://minio.example.com:99999", "port", true},
		{"endpoint on AWS", func(a *Account, _ *Rules) { a.Destination.Endpoint = "https://victim.s3.amazonaws.com" }, "destination.endpoint", "https://victim.s3.amazonaws.com",
			"is an AWS endpoint", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, r := valid(), testRules
			tc.mut(&a, &r)
			before := a
			err := a.Validate(datasettest.Example(t), r)
			wantField(t, err, tc.field, tc.value, tc.reason)
			if shapeErr := a.ValidateShape(datasettest.Example(t)); (shapeErr != nil) != tc.validateShape {
				t.Errorf("ValidateShape() = %v, want an error: %v", shapeErr, tc.validateShape)
			}
			if !reflect.DeepEqual(a.Destination, before.Destination) || a.ID != before.ID {
				t.Error("Validate changed the account")
			}
		})
	}
}

func TestValidateJoinsEveryProblem(t *testing.T) {
	t.Parallel()
	a := valid()
	a.ID = "x"
	a.Destination.Bucket = "B"
	a.Destination.Endpoint = "http://10.0.0.1"
	err := a.Validate(datasettest.Example(t), testRules)
	if n := len(Fields(err)); n != 3 {
		t.Errorf("want 3 problems (id, bucket, endpoint), got %d: %v", n, err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "id" {
		t.Errorf("errors.As: %v", fe)
	}
}

func TestFieldsThroughWrapping(t *testing.T) {
	t.Parallel()
	a := valid()
	a.ID, a.Destination.Bucket = "x", "B"
	err := fmt.Errorf("account %s: %w", a.ID, a.Validate(datasettest.Example(t), testRules)) // as ledger.PutAccount wraps it
	if got := Fields(err); len(got) != 2 || got[0].Field != "id" || got[1].Field != "destination.bucket" {
		t.Errorf("Fields = %v", got)
	}
	if Fields(nil) != nil || Fields(errors.New("plain")) != nil {
		t.Error("Fields of an error without fields")
	}
}

// testNow is the clock the start-date tests run at; valid()'s start date is
// 68 days before it.
var testNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// TestValidateStartDate: the start date against today and the backfill
// limit (L6), through Validate (Rules.Now, Rules.MaxBackfillDays) and
// ValidateStart alike; each refusal a *FieldError naming start_date.
func TestValidateStartDate(t *testing.T) {
	t.Parallel()
	rules := func(now time.Time, limit int) Rules {
		r := testRules
		r.Now, r.MaxBackfillDays = now, limit
		return r
	}
	if err := valid().Validate(datasettest.Example(t), rules(testNow, envvar.DefaultMaxBackfillDays)); err != nil {
		t.Fatalf("valid account: %v", err)
	}
	cases := []struct {
		name         string
		mut          func(*Account)
		value, error string
	}{
		{"start tomorrow", func(a *Account) { a.StartDate = civil.MustParse("2026-03-11") }, "2026-03-11",
			`start_date "2026-03-11": in the future (today is 2026-03-10 in UTC)`},
		// 2026-03-10 12:00 UTC is already 03-11 in Kiritimati (UTC+14), not yet in Honolulu.
		{"start tomorrow in the zone", func(a *Account) { a.TimeZone = "Pacific/Honolulu"; a.StartDate = civil.MustParse("2026-03-11") }, "2026-03-11",
			"in the future (today is 2026-03-10 in Pacific/Honolulu)"},
		{"start older than the limit", func(a *Account) { a.StartDate = civil.MustParse("2025-02-02") }, "2025-02-02",
			`start_date "2025-02-02": more than 400 days back, the deployment's backfill limit (earliest 2025-02-03)`},
		{"start in year 1", func(a *Account) { a.StartDate = civil.MustParse("0001-01-01") }, "0001-01-01",
			`start_date "0001-01-01": more than 400 days back, the deployment's backfill limit (earliest 2025-02-03)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := valid()
			tc.mut(&a)
			err := a.Validate(datasettest.Example(t), rules(testNow, envvar.DefaultMaxBackfillDays))
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("Validate: error %v, want one containing %q", err, tc.error)
			}
			wantField(t, err, "start_date", tc.value, "")
			if err := a.ValidateStart(testNow, envvar.DefaultMaxBackfillDays); err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("ValidateStart: error %v, want one containing %q", err, tc.error)
			}
			if err := a.ValidateShape(datasettest.Example(t)); err != nil {
				t.Errorf("ValidateShape does not read a clock: %v", err)
			}
			// The zero Now checks no start date against a clock.
			if err := a.Validate(datasettest.Example(t), rules(time.Time{}, envvar.DefaultMaxBackfillDays)); err != nil {
				t.Errorf("Validate without Now: %v", err)
			}
		})
	}
	// The boundaries: today, and exactly the limit back.
	for _, tc := range []struct {
		zone, start string
		limit       int
	}{
		{"UTC", "2026-03-10", envvar.DefaultMaxBackfillDays},
		{"UTC", "2025-02-03", envvar.DefaultMaxBackfillDays},
		{"Pacific/Kiritimati", "2026-03-11", envvar.DefaultMaxBackfillDays},
		{"UTC", "2026-03-01", 9},
		{"UTC", "0001-01-01", 0}, // no limit
	} {
		a := valid()
		a.TimeZone, a.StartDate = tc.zone, civil.MustParse(tc.start)
		if err := a.Validate(datasettest.Example(t), rules(testNow, tc.limit)); err != nil {
			t.Errorf("start %s in %s with limit %d: %v", tc.start, tc.zone, tc.limit, err)
		}
		if err := a.ValidateStart(testNow, tc.limit); err != nil {
			t.Errorf("ValidateStart: start %s in %s with limit %d: %v", tc.start, tc.zone, tc.limit, err)
		}
	}
	short := valid()
	short.StartDate = civil.MustParse("2026-02-28")
	if err := short.Validate(datasettest.Example(t), rules(testNow, 9)); err == nil || !strings.Contains(err.Error(), "more than 9 days back") {
		t.Errorf("start 10 days back with a limit of 9: %v", err)
	}
	// A missing start date or a bad zone is the shape's to report, once.
	for _, mut := range []func(*Account){
		func(a *Account) { a.StartDate = civil.Date{} },
		func(a *Account) { a.TimeZone = "Mars/Olympus"; a.StartDate = civil.MustParse("2030-01-01") },
	} {
		a := valid()
		mut(&a)
		if err := a.ValidateStart(testNow, 1); err != nil {
			t.Errorf("ValidateStart of %+v: %v", a, err)
		}
		if n := len(Fields(a.Validate(datasettest.Example(t), rules(testNow, 1)))); n != 1 {
			t.Errorf("Validate of %+v: %d problems, want 1", a, n)
		}
	}
}
