package account

import (
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The customer's role, its external id and the bucket owner (C1, C4).

var (
	roleARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:iam::([0-9]{12}):role/[\w+=,.@/-]{1,512}$`)
	// externalIDRE is STS AssumeRole's ExternalId constraint: 2 to 1,224
	// characters of [\w+=,.@:/-]
	// (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html).
	// \w is [A-Za-z0-9_]: no spaces, although an IAM trust policy condition
	// would accept a value STS then refuses.
	externalIDRE = regexp.MustCompile(`^[\w+=,.@:/-]*$`)
)

// ExternalIDPrefix starts every external id NewExternalID makes.
const ExternalIDPrefix = "daybook-"

// NewExternalID returns a new external id from r: ExternalIDPrefix and 32
// lowercase base32 characters (160 random bits), within STS's allowed set.
// daybook generates it when an account names none; the customer puts it in
// the role's trust policy (sts:ExternalId), so it is shown once when the
// account is created.
func NewExternalID(r io.Reader) (string, error) {
	var b [20]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("external id: %w", err)
	}
	return ExternalIDPrefix + strings.ToLower(base32.StdEncoding.EncodeToString(b[:])), nil
}

// ValidExternalID reports whether id is an ExternalId STS accepts.
func ValidExternalID(id string) bool {
	return len(id) >= 2 && len(id) <= 1224 && externalIDRE.MatchString(id)
}

// RoleAccountID returns the 12-digit account id in a role ARN, or "" when
// arn is not a role ARN.
func RoleAccountID(arn string) string {
	if m := roleARNRE.FindStringSubmatch(arn); m != nil {
		return m[1]
	}
	return ""
}

func (d Destination) checkRole(p *problems) {
	switch {
	case d.RoleARN != "":
		if !roleARNRE.MatchString(d.RoleARN) {
			p.add("destination.role_arn", d.RoleARN, "want arn:aws:iam::<12-digit account>:role/<name>")
		} else if why := rolePathProblem(d.RoleARN); why != "" {
			p.add("destination.role_arn", d.RoleARN, "%s", why)
		}
		if d.ExternalID == "" {
			p.add("destination.external_id", "", "required with a role_arn (confused-deputy protection; account.NewExternalID makes one)")
		} else if !ValidExternalID(d.ExternalID) {
			p.add("destination.external_id", d.ExternalID, "want 2 to 1224 characters of letters, digits and _ + = , . @ : / - (STS AssumeRole)")
		}
	case d.ExternalID != "":
		p.add("destination.external_id", d.ExternalID, "set without a role_arn")
	}
}

// rolePathProblem says what is wrong with the path and name of a role ARN
// of the right form, or "". IAM compares a role ARN with a policy's resource
// pattern as a string, so `role/daybook-export-x/../admin` matches
// `role/daybook-export-*` although it reads as another role: an empty, `.`
// or `..` segment (`//`, `/./`, `/../`, a leading or trailing `/`) is
// refused, as IAM never names a role so. Percent-encoded forms (%2e, %2f)
// are refused by the ARN's form already.
func rolePathProblem(arn string) string {
	_, path, _ := strings.Cut(arn, ":role/")
	for i, seg := range strings.Split(path, "/") {
		switch seg {
		case "":
			return fmt.Sprintf("segment %d of the role path %q is empty (a leading, trailing or doubled /)", i+1, path)
		case ".", "..":
			return fmt.Sprintf("segment %d of the role path %q is %q; name the role itself", i+1, path, seg)
		}
	}
	return ""
}

// ErrNoBucketOwner is wrapped by BucketOwner's error.
var ErrNoBucketOwner = errors.New("expected bucket owner unknown")

// BucketOwner returns the AWS account that must own the destination bucket,
// sent as ExpectedBucketOwner on every S3 call (C1, C4), so a bucket that
// changed hands, or a name that is someone else's bucket, is refused by S3
// instead of written to. It is, in order:
//
//   - ExpectedBucketOwner, when set;
//   - with a role, the account in the role ARN;
//   - with daybook's own role on AWS, deploymentAccountID (the deployment's
//     own account; the functions read it from DEPLOYMENT_ACCOUNT_ID).
//
// It is "" with no error only for daybook's own role on a custom endpoint
// (MinIO, R2, ...), where no AWS account owns the bucket. Otherwise, when it
// cannot be determined, the error (wrapping ErrNoBucketOwner) names the
// field. The exporter, the delivery manifest writer and the connection test
// all take the owner from here.
func (d Destination) BucketOwner(deploymentAccountID string) (string, error) {
	switch {
	case d.Kind() != StoreS3:
		return "", nil // only S3 names a bucket's owning account
	case d.ExpectedBucketOwner != "":
		return d.ExpectedBucketOwner, nil
	case d.RoleARN != "":
		if id := RoleAccountID(d.RoleARN); id != "" {
			return id, nil
		}
		return "", fmt.Errorf("%w: destination.role_arn %q has no account id", ErrNoBucketOwner, d.RoleARN)
	case d.Endpoint != "":
		return "", nil
	case ownerRE.MatchString(deploymentAccountID):
		return deploymentAccountID, nil
	}
	return "", fmt.Errorf("%w: destination.expected_bucket_owner is empty and the deployment's account id (%s) is not known", ErrNoBucketOwner, EnvDeploymentAccountID)
}

// checkOwner: the owner is known, and daybook's own role writes only to the
// deployment's own buckets.
func (d Destination) checkOwner(p *problems, deploymentAccountID string) {
	if d.Kind() != StoreS3 {
		return
	}
	owner, err := d.BucketOwner(deploymentAccountID)
	switch {
	case errors.Is(err, ErrNoBucketOwner) && d.RoleARN == "":
		p.add("destination.expected_bucket_owner", "", "required: daybook's own role writes only to buckets of a known account, and this deployment's account id (%s) is not configured", EnvDeploymentAccountID)
	case err != nil:
		// A malformed role ARN, reported by checkRole.
	case d.RoleARN == "" && d.Endpoint == "" && deploymentAccountID != "" && owner != deploymentAccountID:
		p.add("destination.expected_bucket_owner", owner, "daybook's own role writes only to buckets of the deployment's account %s; for a bucket in another account, set role_arn to a role in that account", deploymentAccountID)
	}
}

// MatchWildcard reports whether s matches an IAM-style pattern, anchored at
// both ends: `*` matches any run of characters (including none, `/` and
// `:`), `?` exactly one; every other character matches itself, case
// sensitively, as IAM compares resource ARNs.
func MatchWildcard(pattern, s string) bool {
	// Greedy match with one backtrack point (the last `*`): linear in
	// practice, never exponential.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && (pattern[pi] == '?' || pattern[pi] == s[si]) && pattern[pi] != '*':
			pi++
			si++
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}
