package main

import (
	"cmp"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination"
)

// kmsKeyFlag registers --kms-key: the key the customer's bucket encrypts
// with by default, which the role's permissions policy must let it use.
func kmsKeyFlag(c *cobra.Command) *string {
	return c.Flags().String("kms-key", "", "ARN of the KMS key the bucket encrypts objects with by default (SSE-KMS): the printed permissions policy lets the role use it")
}

// customerPolicies are the documents of acct's role (destination.PolicyFor)
// for this deployment; ok is false for an account written with daybook's
// own role, which has no customer role. A deployment that names no
// exporter role (a stack from before the ExporterRoleArn output) is an
// error saying so.
func (e *opsEnv) customerPolicies(acct account.Account, kmsKey string) (destination.CustomerPolicies, bool, error) {
	if acct.Destination.RoleARN == "" {
		return destination.CustomerPolicies{}, false, nil
	}
	if e.exporterRole == "" {
		return destination.CustomerPolicies{}, false, fmt.Errorf("%s names no exporter role (EXPORTER_ROLE_ARN; the stack output ExporterRoleArn): deploy this release's template to print the role's trust policy", e.dep.desc)
	}
	prefix, err := acct.Prefix(e.stage)
	if err != nil {
		return destination.CustomerPolicies{}, false, err
	}
	p, err := destination.PolicyFor(acct.Destination, destination.CustomerGrant{
		ExporterRole: e.exporterRole, Prefix: prefix, Region: e.cfg.Region, KMSKey: kmsKey,
	})
	if err != nil {
		return destination.CustomerPolicies{}, false, fmt.Errorf("account %s: %w", acct.ID, err)
	}
	return p, true, nil
}

// printPolicies writes what the customer pastes into their account: the
// role's trust policy and its permissions policy, each under a line that
// says where it goes.
func printPolicies(w io.Writer, acct account.Account, p destination.CustomerPolicies, kmsKey string) {
	d := acct.Destination
	fmt.Fprintf(w, "\nFor the customer: role %s in their account, which daybook assumes with external id %s.\n", d.RoleARN, d.ExternalID)
	fmt.Fprintf(w, "Trust policy of the role (aws iam create-role --role-name %s --assume-role-policy-document file://trust.json):\n%s\n",
		roleName(d.RoleARN), p.Trust.JSON())
	what := "s3://" + d.Bucket
	if kmsKey != "" {
		what += " and key " + kmsKey
	}
	fmt.Fprintf(w, "Permissions policy of the role, for %s (aws iam put-role-policy --role-name %s --policy-name daybook --policy-document file://permissions.json):\n%s\n",
		what, roleName(d.RoleARN), p.Permissions.JSON())
	if kmsKey == "" {
		fmt.Fprintf(w, "If the bucket encrypts with a KMS key by default, run this again with --kms-key KEY_ARN for the key's statement.\n")
	}
	fmt.Fprintf(w, "The exporter needs nothing else; daybook account test and verify assume the role with your own AWS identity, which the trust policy must name too for them to run.\n")
}

// roleName is the last path segment of a role ARN.
func roleName(roleARN string) string {
	for i := len(roleARN) - 1; i >= 0; i-- {
		if roleARN[i] == '/' {
			return roleARN[i+1:]
		}
	}
	return cmp.Or(roleARN, "ROLE")
}
