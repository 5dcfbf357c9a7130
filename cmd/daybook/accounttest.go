package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/storeaccess"
)

// errBucketMissing: the destination bucket does not exist.
var errBucketMissing = errors.New("bucket does not exist")

// bucketAPI is what `account test` calls on a destination.
type bucketAPI interface {
	destination.TestAPI
	HeadBucket(ctx context.Context, params *s3.HeadBucketInput, optFns ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
}

var _ bucketAPI = (*s3.Client)(nil)

// headBucket says whether the bucket exists. Only a missing bucket is an
// error: a refused HeadBucket (no s3:ListBucket, another owner) is left to
// the connection test, which names the permission.
func headBucket(ctx context.Context, api bucketAPI, bucket, owner, region string) error {
	in := &s3.HeadBucketInput{Bucket: aws.String(bucket)}
	if owner != "" {
		in.ExpectedBucketOwner = aws.String(owner)
	}
	_, err := api.HeadBucket(ctx, in)
	var nf *s3types.NotFound
	var nsb *s3types.NoSuchBucket
	var ae smithy.APIError
	if errors.As(err, &nf) || errors.As(err, &nsb) || (errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchBucket")) {
		return fmt.Errorf("%w: s3://%s%s", errBucketMissing, bucket, where(region, ""))
	}
	return nil
}

func (a *app) accountTestCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "test ID",
		Short: "Test an account's destination by writing to it, and name any missing permission",
		Long: `Test an account's destination the way an export uses it: write a small object, read it back,
start and abort a multipart upload, list the prefix and its incomplete multipart uploads (the
commit aborts those a killed run left) and delete the object; for an account with an Iceberg
table (destination.table_format: iceberg), also check that the store refuses a write with
If-None-Match: * over an existing object, as the table's commit needs (S3 does; an S3-compatible
store may not, and a day would silently drop out of the table). Each step names the
permission it needs; a bucket that does not exist is said so. Every call names the bucket's
expected owner, as the exporter's do: expected_bucket_owner, else the account in role_arn, else
this deployment's own account (DEPLOYMENT_ACCOUNT_ID).

For an account with a role_arn it then prints what the customer pastes into their AWS account: the
role's trust policy (the exporter's role, ExporterRoleArn, with the account's external id) and its
permissions policy on the bucket and prefix (Glue tables with glue, the bucket's KMS key with
--kms-key); -o json gives them as trust_policy and permissions_policy. For a Google Cloud Storage
or Azure destination (destination.store gcs or azure) the same steps run through the store's own
API, a failure naming the missing permission or role assignment, and it prints the commands the
customer runs in their cloud (the workload identity pool and provider, or the Entra ID federated
credential, and the role on the bucket or container), trusting the exporter's role and, when the
stack deploys the web console (ConsoleRoleArn), the console's role; -o json gives them as
customer_setup.`,
		Args: cli.ExactArgs("ID"),
	}
	a.deploymentFlags(c)
	out := outputFlag(c)
	kmsKey := kmsKeyFlag(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		ctx := c.Context()
		e, acct, err := a.account(ctx, args[0], "account")
		if err != nil {
			return err
		}
		prefix, err := acct.Prefix(e.stage)
		if err != nil {
			return err
		}
		pol, hasRole, perr := e.customerPolicies(acct, *kmsKey)
		if perr != nil && *kmsKey != "" {
			return perr
		}
		setup, hasSetup, serr := e.customerSetup(acct)
		if serr != nil {
			perr = serr
		}
		checks, cerr := a.testDestination(ctx, e, acct)
		if errors.Is(cerr, errBucketMissing) {
			// The customer may not have made the bucket yet: what they
			// paste is printed all the same.
			switch {
			case hasRole && *out == outputJSON:
				if err := printJSON(a.stdout, map[string]any{"account": acct.ID, "bucket": acct.Destination.Bucket, "prefix": prefix, "ok": false,
					"problem": cerr.Error(), "trust_policy": pol.Trust, "permissions_policy": pol.Permissions}); err != nil {
					return err
				}
			case hasSetup && *out == outputJSON:
				if err := printJSON(a.stdout, map[string]any{"account": acct.ID, "bucket": acct.Destination.Bucket, "prefix": prefix, "ok": false,
					"problem": cerr.Error(), "customer_setup": setup}); err != nil {
					return err
				}
			case hasRole:
				printPolicies(a.stdout, acct, pol, *kmsKey)
			case hasSetup:
				printSetup(a.stdout, acct, setup)
			}
			return fmt.Errorf("account %s: %w", acct.ID, cerr)
		}
		if *out == outputJSON {
			doc := map[string]any{
				"account": acct.ID, "bucket": acct.Destination.Bucket, "prefix": prefix, "ok": cerr == nil, "checks": checks,
			}
			if hasRole {
				doc["trust_policy"], doc["permissions_policy"] = pol.Trust, pol.Permissions
			}
			if hasSetup {
				doc["customer_setup"] = setup
			}
			if err := printJSON(a.stdout, doc); err != nil {
				return err
			}
			return cerr
		}
		defer func() {
			switch {
			case perr != nil:
				fmt.Fprintf(a.stderr, "daybook: %v\n", perr)
			case hasRole:
				printPolicies(a.stdout, acct, pol, *kmsKey)
			case hasSetup:
				printSetup(a.stdout, acct, setup)
			}
		}()
		tw := newTable(a.stdout)
		tw.header("STEP\tPERMISSION\tRESULT")
		for _, ch := range checks {
			res := "ok"
			if !ch.OK {
				res = "FAIL: " + ch.Problem
			}
			tw.row(ch.Step, ch.Permission, res)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return cerr
	}
	return c
}

// testDestination runs account test's checks on acct's destination: the
// bucket exists (errBucketMissing), then a write, a read, a multipart upload
// started and aborted, the listings and a delete, each naming its
// permission. It returns the checks done and the first failure.
func (a *app) testDestination(ctx context.Context, e *opsEnv, acct account.Account) ([]destination.Check, error) {
	prefix, err := acct.Prefix(e.stage)
	if err != nil {
		return nil, err
	}
	if acct.Destination.Kind() != account.StoreS3 {
		b, err := e.bucket(ctx, acct)
		if err != nil {
			return nil, err
		}
		probe, err := storeaccess.ProbeOf(acct.Destination, e.storeGrant(acct))
		if err != nil {
			return nil, err
		}
		checks, err := storeaccess.CheckStore(ctx, b, probe, prefix, a.now())
		if errors.Is(err, bucket.ErrNoSuchBucket) {
			return nil, fmt.Errorf("%w: %s", errBucketMissing, b.URI(""))
		}
		return checks, err
	}
	owner, err := e.bucketOwner(acct)
	if err != nil {
		return nil, err
	}
	api := e.buckets.Client(acct.ID, acct.Destination)
	region := cmp.Or(acct.Destination.Region, e.cfg.Region)
	if err := headBucket(ctx, api, acct.Destination.Bucket, owner, region); err != nil {
		return nil, err
	}
	checks, err := destination.CheckConnection(ctx, api, acct.Destination.Bucket, prefix, owner,
		destination.S3Attributes(acct.Destination, e.rules.DeploymentAccountID), a.now())
	if acct.Destination.TableFormat == account.TableFormatIceberg {
		c := destination.CheckConditionalWrite(ctx, api, acct.Destination.Bucket, prefix, owner, a.now())
		checks = append(checks, c)
		if !c.OK {
			err = errors.Join(err, fmt.Errorf("destination s3://%s/%s does not refuse a conditional write over an existing object, which its Iceberg table needs", acct.Destination.Bucket, prefix))
		}
	}
	return checks, err
}
