package account

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/envvar"
)

// The environment variables Rules come from (with MAX_BACKFILL_DAYS, which
// package envvar reads). template.yaml sets them on the functions (see
// RulesFromEnv); the CLI reads them from a deployment's env.json or its
// stack outputs.
const (
	// EnvDeploymentAccountID is the deployment's own AWS account id
	// (${AWS::AccountId}).
	EnvDeploymentAccountID = "DEPLOYMENT_ACCOUNT_ID"
	// EnvCustomerRolePattern is the IAM resource pattern of the customer
	// roles the exporter may assume, the same string as in its IAM policy.
	EnvCustomerRolePattern = "CUSTOMER_ROLE_PATTERN"
	// EnvAllowPrivateEndpoints is "true" where custom endpoints may be on
	// private addresses.
	EnvAllowPrivateEndpoints = "ALLOW_PRIVATE_ENDPOINTS"
	// EnvDestinationSecretPattern is the ARN pattern of the Secrets
	// Manager secrets the exporter may read for GCS and Azure destinations
	// in credential_mode secret, the same string as in its IAM policy.
	EnvDestinationSecretPattern = "DESTINATION_SECRET_PATTERN"
)

// rolePatternRE is the form of a customer role pattern: a role ARN in which
// the partition, the account and the name may use IAM's * and ? wildcards.
var rolePatternRE = regexp.MustCompile(`^arn:[a-z*?-]+:iam::[0-9*?]*:role/[\w+=,.@/*?-]+$`)

// secretPatternRE is the form of a destination secret pattern: a Secrets
// Manager secret ARN whose parts may use IAM's wildcards.
var secretPatternRE = regexp.MustCompile(`^arn:[a-z*?-]+:secretsmanager:[a-z0-9*?-]+:[0-9*?]+:secret:[A-Za-z0-9/_+=.@*?-]+$`)

// RulesFromEnv reads the deployment's Rules through lookup (os.LookupEnv, or
// a map from an env.json): DeploymentAccountID, RolePattern, SecretPattern
// and AllowPrivateEndpoints from the variables above, where an unset variable
// leaves the zero value, and MaxBackfillDays from MAX_BACKFILL_DAYS, read as
// the ledger reads it (envvar: unset is envvar.DefaultMaxBackfillDays).
// Every malformed variable is named in the error. Now is the caller's.
func RulesFromEnv(lookup func(string) (string, bool)) (Rules, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	var errs []error
	bad := func(name, v, why string) {
		errs = append(errs, fmt.Errorf("environment variable %s=%q: %s", name, v, why))
	}
	env := envvar.Lookup(lookup)
	r := Rules{
		DeploymentAccountID: get(EnvDeploymentAccountID),
		RolePattern:         get(EnvCustomerRolePattern),
		SecretPattern:       get(EnvDestinationSecretPattern),
		MaxBackfillDays:     env.MaxBackfillDays(),
	}
	errs = append(errs, env.Err())
	if v := r.DeploymentAccountID; v != "" && !ownerRE.MatchString(v) {
		bad(EnvDeploymentAccountID, v, "want a 12-digit AWS account id")
	}
	if v := r.RolePattern; v != "" && !rolePatternRE.MatchString(v) {
		bad(EnvCustomerRolePattern, v, "want an IAM role ARN pattern such as arn:aws:iam::*:role/daybook-export-*")
	}
	if v := r.SecretPattern; v != "" && !secretPatternRE.MatchString(v) {
		bad(EnvDestinationSecretPattern, v, "want a Secrets Manager ARN pattern such as arn:aws:secretsmanager:eu-west-1:123456789012:secret:daybook/destinations/*")
	}
	if v := get(EnvAllowPrivateEndpoints); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad(EnvAllowPrivateEndpoints, v, "want true or false")
		}
		r.AllowPrivateEndpoints = b
	}
	return r, errors.Join(errs...)
}
