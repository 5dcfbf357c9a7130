package account

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
)

// Rules are the deployment's facts an account is checked against when it is
// saved. The zero Rules checks every field's own form and refuses what can
// never be safe; each rule below says what its zero value means.
type Rules struct {
	// Now is when the account is saved: its start date may not be after
	// today, in the account's time zone (ValidateStart). Zero: the start
	// date is not checked against a clock (ledger.PutAccount checks it at
	// its own).
	Now time.Time
	// MaxBackfillDays is the deployment's backfill limit (MAX_BACKFILL_DAYS,
	// L6): with Now, the start date may be at most this many days before
	// today. 0: no limit.
	MaxBackfillDays int
	// RolePattern is the IAM resource pattern of the customer roles the
	// deployment may assume, exactly as in its IAM policy, e.g.
	// arn:aws:iam::*:role/daybook-export-* (`*` and `?` wildcards, anchored;
	// see MatchWildcard). A role ARN outside it is refused when the account
	// is saved, not after its exports fail. Empty: any well-formed role ARN.
	RolePattern string
	// DeploymentAccountID is the deployment's own 12-digit AWS account id:
	// the expected bucket owner of a destination written with daybook's own
	// role (Destination.BucketOwner). Empty: such a destination must name
	// expected_bucket_owner, or Validate refuses it.
	DeploymentAccountID string
	// AllowPrivateEndpoints allows custom endpoints on private addresses
	// (RFC 1918, fc00::/7, 100.64.0.0/10). False: refused (C3).
	AllowPrivateEndpoints bool
	// SecretPattern is the ARN pattern of the AWS Secrets Manager secrets
	// the exporter may read for destinations in credential_mode secret,
	// exactly as in its IAM policy (`*` and `?` wildcards). Empty: no
	// secret_arn is accepted.
	SecretPattern string
}

// MaxStageLen is the longest deployment stage (template.yaml's Stage
// parameter allows ^[a-z][a-z0-9-]{0,15}$). The key length check renders
// {{.Stage}} this long, so whether a prefix fits does not depend on the
// stage: the ledger's guard (ValidateShape) and Validate agree, and an
// account valid in one stage is valid in every one.
const MaxStageLen = 16

// FieldError is one refused field: Field is its JSON path
// (destination.role_arn), Value the value refused, Reason why, in words.
// Validate and CheckIsolation return these, joined; Fields lists them.
type FieldError struct {
	Field  string
	Value  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Reason) }

// Fields returns every *FieldError in err: err itself, the errors it joins
// and the errors they wrap.
func Fields(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *FieldError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

type problems []error

func (p *problems) add(field string, v any, format string, args ...any) {
	*p = append(*p, &FieldError{Field: field, Value: fmt.Sprint(v), Reason: fmt.Sprintf(format, args...)})
}

var (
	bucketRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	regionRE  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$`)
	datasetRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	ownerRE   = regexp.MustCompile(`^[0-9]{12}$`)
)

// Validate checks the account as it is about to be saved: every field's own
// form (ValidateShape), a tenant key written canonically (see
// checkCanonicalKey), the deployment's rules (role pattern, bucket owner,
// private endpoints) and, when rules.Now is set, the start date against
// today and the backfill limit (ValidateStart). Each problem is a
// *FieldError naming the field and the value; they are joined. It changes
// nothing. Checking the account against the others is CheckIsolation's job.
// catalog is the deployment's dataset catalog.
func (a Account) Validate(catalog *dataset.Set, rules Rules) error {
	p := a.shape(catalog)
	a.checkCanonicalKey(catalog, &p)
	p = append(p, a.deploymentRules(rules)...)
	if !rules.Now.IsZero() {
		p = append(p, a.startRule(rules.Now, rules.MaxBackfillDays)...)
	}
	return errors.Join(a.redactSecrets(p)...)
}

// ValidateStart checks the start date against now (L6): it may be neither
// after today nor, when maxBackfillDays > 0, more than maxBackfillDays days
// before today (EarliestStart), both in the account's time zone. A problem
// is a *FieldError naming start_date. A missing start date or an unknown
// zone is ValidateShape's to report; ValidateStart then checks nothing.
// Validate applies it with Rules.Now and Rules.MaxBackfillDays;
// ledger.PutAccount with its own clock and configured limit.
func (a Account) ValidateStart(now time.Time, maxBackfillDays int) error {
	return errors.Join(a.startRule(now, maxBackfillDays)...)
}

func (a Account) startRule(now time.Time, maxBackfillDays int) problems {
	var p problems
	if a.StartDate.IsZero() || a.TimeZone == "Local" {
		return p
	}
	loc, err := time.LoadLocation(cmp.Or(a.TimeZone, DefaultTimeZone))
	if err != nil {
		return p
	}
	today := civil.In(now, loc)
	switch earliest := EarliestStart(today, maxBackfillDays); {
	case a.StartDate.After(today):
		p.add("start_date", a.StartDate, "in the future (today is %s in %s)", today, loc)
	case maxBackfillDays > 0 && a.StartDate.Before(earliest):
		p.add("start_date", a.StartDate, "more than %d days back, the deployment's backfill limit (earliest %s)", maxBackfillDays, earliest)
	}
	return p
}

// EarliestStart is the oldest start date the backfill limit allows on today:
// maxBackfillDays days back.
func EarliestStart(today civil.Date, maxBackfillDays int) civil.Date {
	return today.AddDays(-maxBackfillDays)
}

// ValidateShape checks what any stored account must satisfy whatever the
// deployment: ids, dates, zone, datasets (against catalog), bucket,
// prefix template and key length, role ARN and external id form, endpoint
// form, format. The ledger uses it as its last guard; saving an account goes
// through Validate with the deployment's Rules.
func (a Account) ValidateShape(catalog *dataset.Set) error {
	return errors.Join(a.redactSecrets(a.shape(catalog))...)
}

func (a Account) shape(catalog *dataset.Set) problems {
	var p problems
	if !ValidID(a.ID) {
		p.add("id", a.ID, "want acct_ followed by 16 lowercase base32 characters (account.NewID)")
	}
	if why := nameProblem(a.Name); why != "" {
		p.add("name", a.Name, "%s", why)
	}
	if a.StartDate.IsZero() {
		p.add("start_date", "", "required (YYYY-MM-DD, the backfill horizon)")
	}
	if a.TimeZone != "" {
		if _, err := time.LoadLocation(a.TimeZone); err != nil || a.TimeZone == "Local" {
			p.add("time_zone", a.TimeZone, "not an IANA time zone (e.g. Europe/Paris)")
		}
	}
	if a.SettleDelay != nil && (a.SettleDelay.D() < 0 || a.SettleDelay.D() > 7*24*time.Hour) {
		p.add("settle_delay", a.SettleDelay.D().String(), "must be between 0 and 168h")
	}
	if a.SourceShard != "" {
		if err := dataset.ValidShardName(a.SourceShard); err != nil {
			p.add("source_shard", a.SourceShard, "%v", err)
		}
	}
	a.checkDatasets(catalog, &p)
	a.checkTenantKey(catalog, &p)
	d := a.Destination
	if d.Kind() == StoreS3 && (!bucketRE.MatchString(d.Bucket) || strings.Contains(d.Bucket, "..")) {
		p.add("destination.bucket", d.Bucket, "not an S3 bucket name")
	}
	d.checkStore(&p)
	d.checkControls(&p)
	if d.Region != "" && !regionRE.MatchString(d.Region) {
		p.add("destination.region", d.Region, "not a region name (e.g. eu-west-1; lowercase letters, digits and -)")
	}
	a.checkPrefix(&p)
	d.checkRole(&p)
	d.checkAccess(&p)
	a.checkNoSecrets(&p)
	if d.ExpectedBucketOwner != "" && !ownerRE.MatchString(d.ExpectedBucketOwner) {
		p.add("destination.expected_bucket_owner", d.ExpectedBucketOwner, "want a 12-digit AWS account id")
	}
	if d.Endpoint != "" {
		if _, err := parseEndpoint(d.Endpoint); err != nil {
			p.add("destination.endpoint", d.Endpoint, "%v", err)
		}
	}
	if format, err := d.FileFormat(); err != nil {
		p.add("destination.format", d.Format, "want %s", fileformat.Names())
	} else if c := d.Compression; c != "" && !format.Takes(c) {
		p.add("destination.compression", c, "%s takes %s", format, format.CodecNames())
	}
	if !d.ParquetProfile.Valid() {
		p.add("destination.parquet_profile", d.ParquetProfile, "want compatible (the default) or compact")
	} else if format, err := d.FileFormat(); err == nil && d.ParquetProfile != "" && format != fileformat.Parquet {
		p.add("destination.parquet_profile", d.ParquetProfile, "applies to parquet only, and the format is %s", format)
	}
	switch format, _ := d.FileFormat(); {
	case d.TableFormat != "" && d.TableFormat != TableFormatIceberg:
		p.add("destination.table_format", d.TableFormat, "want iceberg, or none (the default)")
	case d.TableFormat == TableFormatIceberg && format != fileformat.Parquet:
		p.add("destination.table_format", d.TableFormat, "needs parquet files, and the format is %s", d.Format)
	case d.TableFormat == TableFormatIceberg && cmp.Or(a.TimeZone, DefaultTimeZone) != DefaultTimeZone:
		p.add("destination.table_format", d.TableFormat, "partitions its table by UTC day, and time_zone is %s", a.TimeZone)
	}
	if d.TableFormat == TableFormatIceberg {
		a.checkIcebergDatasets(catalog, &p)
	}
	if g := d.Glue; g != nil {
		switch {
		case d.TableFormat != TableFormatIceberg:
			p.add("destination.glue.database", g.Database, "registers the Iceberg tables, and table_format is %q", d.TableFormat)
		case !glueName.MatchString(g.Database):
			p.add("destination.glue.database", g.Database, "want 1 to 255 lowercase letters, digits and underscores")
		case g.TablePrefix != "" && !glueName.MatchString(g.TablePrefix):
			p.add("destination.glue.table_prefix", g.TablePrefix, "want lowercase letters, digits and underscores")
		case len(g.TablePrefix) > maxGluePrefixLen:
			p.add("destination.glue.table_prefix", g.TablePrefix, "want at most %d characters", maxGluePrefixLen)
		case d.Endpoint != "":
			p.add("destination.glue.database", g.Database, "registers tables in AWS Glue, and the bucket is at the custom endpoint %s", d.Endpoint)
		}
	}
	switch d.Checksums {
	case "", ChecksumsFullObject, ChecksumsComposite, ChecksumsNone:
	default:
		p.add("destination.checksums", d.Checksums, "want full_object, composite or none")
	}
	return p
}

// glueName is a Glue database or table name as Athena reads it: lowercase
// letters, digits and underscores, at most 255.
var glueName = regexp.MustCompile(`^[a-z0-9_]{1,255}$`)

// maxGluePrefixLen leaves the longest dataset name room in Glue's 255.
const maxGluePrefixLen = 128

// MaxNameLen is the longest account name, in characters.
const MaxNameLen = 128

// nameProblem says what is wrong with an account name, or "": it is printed
// by every CLI command and page, so it is valid UTF-8 of at most MaxNameLen
// characters with no control or format characters (terminal escapes,
// newlines, tabs, bidirectional overrides, zero-width characters).
func nameProblem(name string) string {
	if !utf8.ValidString(name) {
		return "not valid UTF-8"
	}
	if n := utf8.RuneCountInString(name); n > MaxNameLen {
		return fmt.Sprintf("%d characters, more than %d", n, MaxNameLen)
	}
	for i, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Sprintf("character %U at byte %d is a control or format character", r, i)
		}
	}
	return ""
}

// checkDatasets: at least one, each in the catalog, none twice.
func (a Account) checkDatasets(catalog *dataset.Set, p *problems) {
	if len(a.Datasets) == 0 {
		p.add("datasets", "", "at least one dataset is required")
		return
	}
	known := catalog.Names()
	seen := map[string]bool{}
	for _, ds := range a.Datasets {
		switch {
		case !datasetRE.MatchString(ds):
			p.add("datasets", ds, "not a dataset name (lowercase letters, digits, _)")
		case !slices.Contains(known, ds):
			p.add("datasets", ds, "unknown dataset (known: %s)", strings.Join(known, ", "))
		case seen[ds]:
			p.add("datasets", ds, "listed twice")
		}
		seen[ds] = true
	}
}

// TenantKeyMax is the longest tenant_key accepted.
const TenantKeyMax = 200

// checkTenantKey: a key of printable characters, of every enabled
// dataset's tenant type (the account id is the key when none is given).
func (a Account) checkTenantKey(catalog *dataset.Set, p *problems) {
	if k := a.TenantKey; k != "" {
		switch {
		case len(k) > TenantKeyMax:
			p.add("tenant_key", k, "longer than %d bytes", TenantKeyMax)
			return
		case strings.TrimSpace(k) != k || strings.IndexFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			p.add("tenant_key", k, "has leading or trailing space or a control character")
			return
		}
	}
	for _, name := range a.Datasets {
		ds, err := catalog.Get(name)
		if err != nil {
			continue // named by checkDatasets
		}
		if _, err := ds.TenantValue(a.Tenant()); err != nil {
			if a.TenantKey == "" {
				p.add("tenant_key", "", "%v: give the tenant's key in the source", err)
			} else {
				p.add("tenant_key", a.TenantKey, "%v", err)
			}
			return
		}
	}
}

// checkCanonicalKey refuses a tenant key that an enabled dataset's tenant
// type writes otherwise ("0007" or "+7" for the integer 7, an upper-case
// uuid), naming both forms: one tenant has one key, so the key an operator
// reads in the account is the one the source is asked for. It is part of
// Validate (what `account put` saves) and not of ValidateShape (the ledger's
// last guard), so an account stored before this rule is still enabled,
// disabled and exported (its key binds its canonical value, and the guards
// compare identities); its next put must write the key canonically.
func (a Account) checkCanonicalKey(catalog *dataset.Set, p *problems) {
	if a.TenantKey == "" {
		return
	}
	for _, name := range a.Datasets {
		ds, err := catalog.Get(name)
		if err != nil {
			continue // named by checkDatasets
		}
		canon, err := ds.CanonicalTenantKey(a.TenantKey)
		if err != nil || canon == a.TenantKey {
			continue // a key of another type is checkTenantKey's
		}
		p.add("tenant_key", a.TenantKey, "dataset %s binds the tenant as %s, written %q: write %q (a tenant has one key: integers without a plus sign or leading zeros, uuids in lower case)",
			ds.Name, ds.TenantKind(), canon, canon)
		return
	}
}

// Tenant is the value bound to the datasets' tenant column: TenantKey,
// else the account id.
func (a Account) Tenant() string { return cmp.Or(a.TenantKey, a.ID) }

// checkIcebergDatasets refuses a snapshot dataset (a complete copy per
// day, no partition column) in an account with Iceberg tables, which are
// partitioned on a dataset's partition column.
func (a Account) checkIcebergDatasets(catalog *dataset.Set, p *problems) {
	for _, name := range a.Datasets {
		if ds, err := catalog.Get(name); err == nil && ds.IsSnapshot() {
			p.add("destination.table_format", a.Destination.TableFormat, "dataset %s is a snapshot (a complete copy per day, no partition column), which Iceberg tables do not take: export it without table_format", name)
		}
	}
}

// MaxPrefixSegments is the most `/`-separated segments a rendered prefix
// may have: saving an account writes one isolation guard per segment
// (Guards) in one DynamoDB transaction, which holds at most 100 items.
const MaxPrefixSegments = 32

// checkPrefix: a valid template whose longest key, rendered with the
// longest stage, fits S3's limit.
func (a Account) checkPrefix(p *problems) {
	tmpl := cmp.Or(a.Destination.Prefix, DefaultPrefix)
	field := "destination.prefix"
	if err := layout.ValidatePrefix(tmpl); err != nil {
		p.add(field, tmpl, "%s", reason(err))
		return
	}
	if !ValidID(a.ID) {
		return // reported; the key length needs a real id's length
	}
	rendered, err := layout.RenderPrefix(tmpl, a.Vars(strings.Repeat("s", MaxStageLen)))
	if err != nil {
		p.add(field, tmpl, "%s", reason(err))
		return
	}
	if n := len(layout.Segments(rendered)); n > MaxPrefixSegments {
		p.add(field, tmpl, "rendered as %q, %d segments, more than %d", rendered, n, MaxPrefixSegments)
	}
	if err := layout.CheckKeyLength(rendered, a.Datasets); err != nil {
		p.add(field, tmpl, "rendered as %q, %s", rendered, reason(err))
	}
}

// reason is a layout error's reason without the repeated prefix value.
func reason(err error) string {
	var pe *layout.PrefixError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return err.Error()
}

// deploymentRules are the checks that need the deployment's facts.
func (a Account) deploymentRules(rules Rules) problems {
	var p problems
	if rules.DeploymentAccountID != "" && !ownerRE.MatchString(rules.DeploymentAccountID) {
		p.add("rules.deployment_account_id", rules.DeploymentAccountID, "want a 12-digit AWS account id (the deployment's configuration, not the account's)")
		return p
	}
	d := a.Destination
	if d.RoleARN != "" && rules.RolePattern != "" && roleARNRE.MatchString(d.RoleARN) && !MatchWildcard(rules.RolePattern, d.RoleARN) {
		p.add("destination.role_arn", d.RoleARN, "outside the roles this deployment may assume (%s); the customer's role must be named to match it", rules.RolePattern)
	}
	if d.Kind() == StoreS3 {
		// An AWS account owns an S3 bucket; a GCS or Azure one has none.
		d.checkOwner(&p, rules.DeploymentAccountID)
	}
	d.checkSecretRule(&p, rules.SecretPattern)
	if d.Endpoint != "" {
		d.checkEndpointAddress(&p, rules.AllowPrivateEndpoints)
	}
	return p
}
