package main

import (
	"cmp"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/storeaccess"
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

// storeGrant is daybook's side of acct's GCS or Azure setup: the
// deployment's exporter role, which the customer trusts, and its console's
// role when the stack deploys the console (it reads the bucket as itself).
func (e *opsEnv) storeGrant(acct account.Account) storeaccess.StoreGrant {
	return storeaccess.StoreGrant{AccountID: acct.ID, ExporterRole: e.exporterRole, ConsoleRole: e.consoleRole}
}

// customerSetup is what the customer of a GCS or Azure destination runs
// in their cloud (storeaccess.CustomerSetup); ok is false for an S3
// destination (its customer part is the role's policies) and for one
// without destination.gcs or destination.azure (an emulator's, reached
// without credentials).
func (e *opsEnv) customerSetup(acct account.Account) (storeaccess.StoreSetup, bool, error) {
	d := acct.Destination
	if d.Kind() == account.StoreS3 || (d.GCS == nil && d.Azure == nil) {
		return storeaccess.StoreSetup{}, false, nil
	}
	if e.exporterRole == "" {
		return storeaccess.StoreSetup{}, false, fmt.Errorf("%s names no exporter role (EXPORTER_ROLE_ARN; the stack output ExporterRoleArn): deploy this release's template to print the customer's setup", e.dep.desc)
	}
	s, err := storeaccess.CustomerSetup(d, e.storeGrant(acct))
	if err != nil {
		return storeaccess.StoreSetup{}, false, fmt.Errorf("account %s: %w", acct.ID, err)
	}
	return s, true, nil
}

// printSetup writes the customer's setup of a GCS or Azure destination as
// numbered commands.
func printSetup(w io.Writer, acct account.Account, s storeaccess.StoreSetup) {
	fmt.Fprintf(w, "\nFor the customer: what lets daybook write %s (store %s, credential_mode %s):\n%s", acct.Destination.URI(""), s.Store, s.CredentialMode, s)
}

// printCustomerPart prints what the customer does for acct's destination:
// an S3 role's policies (with kmsKey's statement) or a GCS or Azure
// destination's setup; an error making it goes to errw.
func (e *opsEnv) printCustomerPart(w, errw io.Writer, acct account.Account, kmsKey string) {
	if acct.Destination.Kind() != account.StoreS3 {
		s, ok, err := e.customerSetup(acct)
		switch {
		case err != nil:
			fmt.Fprintf(errw, "daybook: %v\n", err)
		case ok:
			printSetup(w, acct, s)
		}
		return
	}
	pol, ok, err := e.customerPolicies(acct, kmsKey)
	switch {
	case err != nil:
		fmt.Fprintf(errw, "daybook: %v\n", err)
	case ok:
		printPolicies(w, acct, pol, kmsKey)
	}
}
