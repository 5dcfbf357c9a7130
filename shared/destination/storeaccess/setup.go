// Package storeaccess is a GCS or Azure destination's access from the
// customer's side: the commands that grant it (CustomerSetup, printed by
// `daybook account put` and `account test`, shown in docs/stores.md) and
// the connection test that checks it is granted (CheckStore), with each
// store's words for what is missing. The credentials themselves are built
// by gcpauth and azureauth.
package storeaccess

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/arn"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
)

// What a customer does in their own cloud so daybook can write a GCS bucket
// or an Azure container, as commands to run (the S3 counterpart is the
// role's trust and permissions policy). `daybook account put` and `account
// test` print it; docs/stores.md explains each command. Every command's
// syntax is the reference page's:
//
//	gcloud iam workload-identity-pools create:            https://cloud.google.com/sdk/gcloud/reference/iam/workload-identity-pools/create
//	gcloud iam workload-identity-pools providers create-aws: https://cloud.google.com/sdk/gcloud/reference/iam/workload-identity-pools/providers/create-aws
//	gcloud iam service-accounts add-iam-policy-binding:   https://cloud.google.com/sdk/gcloud/reference/iam/service-accounts/add-iam-policy-binding
//	gcloud storage buckets add-iam-policy-binding:        https://cloud.google.com/sdk/gcloud/reference/storage/buckets/add-iam-policy-binding
//	az ad app federated-credential create:                https://learn.microsoft.com/cli/azure/ad/app/federated-credential
//	az role assignment create (container scope):          https://learn.microsoft.com/azure/storage/blobs/assign-azure-role-data-access
//	az storage container generate-sas:                    https://learn.microsoft.com/cli/azure/storage/container#az-storage-container-generate-sas
//	aws iam enable-outbound-web-identity-federation:      https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_outbound_getting_started.html

// StoreGrant is what the customer's part names besides the destination.
type StoreGrant struct {
	// AccountID is daybook's account id, for names (the federated
	// credential's).
	AccountID string
	// ExporterRole is the ARN of daybook's exporter role (the stack output
	// ExporterRoleArn): the AWS identity the customer trusts.
	ExporterRole string
	// Issuer is the deployment AWS account's outbound identity federation
	// issuer URL, the iss of the exporter's tokens (Azure). Empty: the
	// setup says how the operator reads it.
	Issuer string
}

// SetupStep is one thing to do: who does it, what, and the command.
type SetupStep struct {
	Who     string `json:"who"`
	What    string `json:"what"`
	Command string `json:"command"`
}

// StoreSetup is the setup of one GCS or Azure destination.
type StoreSetup struct {
	Store          string      `json:"store"`
	CredentialMode string      `json:"credential_mode"`
	Steps          []SetupStep `json:"steps"`
}

// IssuerCommand prints the deployment account's issuer URL.
const IssuerCommand = "aws iam get-outbound-web-identity-federation-info --query IssuerIdentifier --output text"

var saProjectRE = regexp.MustCompile(`^([^@]+)@([a-z0-9-]+)\.iam\.gserviceaccount\.com$`)

// CustomerSetup returns the commands that let daybook write d (a GCS or
// Azure destination). It refuses an S3 destination, whose customer part
// is its role's policies.
func CustomerSetup(d account.Destination, g StoreGrant) (StoreSetup, error) {
	role, err := arn.Parse(g.ExporterRole)
	if err != nil || !strings.HasPrefix(role.Resource, "role/") {
		return StoreSetup{}, fmt.Errorf("exporter role %q: want the role ARN (the stack output ExporterRoleArn)", g.ExporterRole)
	}
	switch d.Kind() {
	case account.StoreGCS:
		if d.GCS == nil {
			return StoreSetup{}, errNoAccess(d)
		}
		return gcsSetup(d, role), nil
	case account.StoreAzure:
		if d.Azure == nil {
			return StoreSetup{}, errNoAccess(d)
		}
		return azureSetup(d, g, role), nil
	}
	return StoreSetup{}, errors.New("an S3 destination's customer part is its role's trust and permissions policies")
}

// errNoAccess: a destination at a custom endpoint without destination.gcs
// or destination.azure is reached without credentials (an emulator), and
// the customer grants nothing.
func errNoAccess(d account.Destination) error {
	return fmt.Errorf("%s at endpoint %s names no destination.%s: it is reached without credentials, and there is nothing for the customer to grant", d.URI(""), d.Endpoint, d.Kind())
}

func gcsSetup(d account.Destination, role arn.ARN) StoreSetup {
	a := *d.GCS
	s := StoreSetup{Store: string(account.StoreGCS), CredentialMode: a.Mode()}
	const customer = "customer"
	sa := a.ServiceAccount
	if a.Mode() == account.CredentialSecret {
		sa = "SERVICE_ACCOUNT_EMAIL"
	}
	bucketBinding := SetupStep{customer, "Let the service account write the bucket",
		fmt.Sprintf("gcloud storage buckets add-iam-policy-binding gs://%s --member=serviceAccount:%s --role=%s", d.Bucket, sa, gcpauth.ObjectRole)}
	if a.Mode() == account.CredentialSecret {
		s.Steps = []SetupStep{
			bucketBinding,
			{customer, "Create a key for it (a service account key: daybook writes through Cloud Storage's JSON API, which an HMAC key cannot sign) and hand key.json to the platform, never in the account file",
				"gcloud iam service-accounts keys create key.json --iam-account=" + sa},
			{"platform", "Keep the key in the secret the account names", "aws secretsmanager put-secret-value --secret-id " + a.SecretARN + " --secret-string file://key.json"},
		}
		return s
	}
	// projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>
	parts := strings.Split(a.WorkloadIdentityProvider, "/")
	number, pool, provider := parts[1], parts[5], parts[7]
	// The pool is in the provider's project (gcloud takes its number as
	// --project); the service account in the project its email names.
	project, poolProject := "", " --project="+number
	if m := saProjectRE.FindStringSubmatch(sa); m != nil {
		project = " --project=" + m[2]
	}
	name := role.Resource[strings.LastIndex(role.Resource, "/")+1:]
	assumed := "arn:" + role.Partition + ":sts::" + role.AccountID + ":assumed-role/" + name
	s.Steps = []SetupStep{
		{customer, "Create a workload identity pool (once; skip if it exists)",
			fmt.Sprintf("gcloud iam workload-identity-pools create %s%s --location=global --display-name=daybook", pool, poolProject)},
		{customer, "Add an AWS provider trusting daybook's AWS account " + role.AccountID + ", for its exporter role only",
			fmt.Sprintf("gcloud iam workload-identity-pools providers create-aws %s%s --location=global --workload-identity-pool=%s --account-id=%s --attribute-condition=%q",
				provider, poolProject, pool, role.AccountID, "attribute.aws_role=='"+assumed+"'")},
		{customer, "Create the service account daybook writes as (skip if it exists)",
			fmt.Sprintf("gcloud iam service-accounts create %s%s --display-name=daybook", strings.Split(sa, "@")[0], project)},
		bucketBinding,
		{customer, "Let daybook's exporter role act as the service account",
			fmt.Sprintf("gcloud iam service-accounts add-iam-policy-binding %s%s --role=roles/iam.workloadIdentityUser --member=%q",
				sa, project, gcpauth.PrincipalSet(a.WorkloadIdentityProvider, role.String()))},
	}
	return s
}

func azureSetup(d account.Destination, g StoreGrant, role arn.ARN) StoreSetup {
	a := *d.Azure
	s := StoreSetup{Store: string(account.StoreAzure), CredentialMode: a.Mode()}
	acct, container := d.StorageAccount, d.Bucket
	if a.Mode() == account.CredentialSecret {
		s.Steps = []SetupStep{
			{"customer", "Create a SAS for the container, with read, add, create, write, delete and list, over HTTPS, and hand sas.txt to the platform (it stops working at its expiry: make a new one before then)",
				fmt.Sprintf("az storage container generate-sas --account-name %s --name %s --permissions racwdl --expiry YYYY-MM-DDTHH:MMZ --https-only --output tsv > sas.txt", acct, container)},
			{"platform", "Keep the SAS in the secret the account names", "aws secretsmanager put-secret-value --secret-id " + a.SecretARN + " --secret-string file://sas.txt"},
		}
		return s
	}
	issuer := g.Issuer
	var steps []SetupStep
	if issuer == "" {
		issuer = "ISSUER"
		steps = append(steps, SetupStep{"platform", "Read the deployment account's issuer URL (after enabling outbound identity federation once: aws iam enable-outbound-web-identity-federation) and put it in place of ISSUER below", IssuerCommand})
	}
	name := "daybook-" + g.AccountID
	cred, _ := json.Marshal(struct {
		Name        string   `json:"name"`
		Issuer      string   `json:"issuer"`
		Subject     string   `json:"subject"`
		Description string   `json:"description"`
		Audiences   []string `json:"audiences"`
	}{name, issuer, role.String(), "daybook exports", []string{azureauth.Audience}})
	s.Steps = append(steps,
		SetupStep{"customer", "Register the application daybook signs in as (skip if it exists; its appId is destination.azure.client_id) and its service principal",
			"az ad sp create --id " + a.ClientID},
		SetupStep{"customer", "Trust daybook's exporter role: a federated credential for the tokens AWS issues it",
			fmt.Sprintf("az ad app federated-credential create --id %s --parameters '%s'", a.ClientID, cred)},
		SetupStep{"customer", "Let the application write the container",
			fmt.Sprintf("az role assignment create --assignee %s --role %q --scope %q", a.ClientID, azureauth.BlobRole, azureauth.ContainerScope(acct, container))},
	)
	return s
}

// String renders the setup as numbered steps, each with who runs it.
func (s StoreSetup) String() string {
	var b strings.Builder
	for i, st := range s.Steps {
		fmt.Fprintf(&b, "%d. (%s) %s:\n     %s\n", i+1, st.Who, st.What, st.Command)
	}
	return b.String()
}
