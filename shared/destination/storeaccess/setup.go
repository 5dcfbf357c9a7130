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
//
// With the web console deployed (the stack output ConsoleRoleArn), the
// console reads the destination with the same kind of credentials as its
// own role, so the customer trusts that role too:
//
//   - GCS: the provider's attribute condition admits both roles (a CEL
//     list membership, `attribute.aws_role in [...]`; the condition is CEL:
//     https://cloud.google.com/iam/docs/reference/rest/v1/projects.locations.workloadIdentityPools.providers,
//     https://github.com/google/cel-spec/blob/master/doc/langdef.md#list-and-map-functions)
//     and the service account binds roles/iam.workloadIdentityUser for each
//     role's principal set (one --member per command). The console asks only
//     for devstorage.read_only tokens (gcpauth.ReadOnlyScope).
//   - Azure: a second federated credential, with the console role as its
//     subject. Entra ID matches a token's issuer, subject and audience
//     against a credential's exactly, and the expressions of flexible
//     federated credentials (claimsMatchingExpression, in preview) match
//     only tokens of GitHub, GitLab and Terraform Cloud
//     (https://learn.microsoft.com/entra/workload-id/workload-identities-flexible-federated-identity-credentials);
//     an application may hold 20 federated credentials, each issuer and
//     subject pair once
//     (https://learn.microsoft.com/entra/workload-id/workload-identity-federation-considerations,
//     https://learn.microsoft.com/graph/api/resources/federatedidentitycredential).

// StoreGrant is what the customer's part names besides the destination.
type StoreGrant struct {
	// AccountID is daybook's account id, for names (the federated
	// credential's).
	AccountID string
	// ExporterRole is the ARN of daybook's exporter role (the stack output
	// ExporterRoleArn): the AWS identity the customer trusts.
	ExporterRole string
	// ConsoleRole is the ARN of the web console's role (the stack output
	// ConsoleRoleArn, which exists only when the stack deploys the
	// console), which reads the destination federated as itself. Empty:
	// no console, and the setup names the exporter's role alone.
	ConsoleRole string
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
	var console *arn.ARN
	if g.ConsoleRole != "" {
		c, err := arn.Parse(g.ConsoleRole)
		if err != nil || !strings.HasPrefix(c.Resource, "role/") {
			return StoreSetup{}, fmt.Errorf("console role %q: want the role ARN (the stack output ConsoleRoleArn)", g.ConsoleRole)
		}
		if c.AccountID != role.AccountID || c.Partition != role.Partition {
			return StoreSetup{}, fmt.Errorf("console role %q: not in the exporter role's AWS account %s (both are the stack's)", g.ConsoleRole, role.AccountID)
		}
		console = &c
	}
	switch d.Kind() {
	case account.StoreGCS:
		if d.GCS == nil {
			return StoreSetup{}, errNoAccess(d)
		}
		return gcsSetup(d, role, console), nil
	case account.StoreAzure:
		if d.Azure == nil {
			return StoreSetup{}, errNoAccess(d)
		}
		return azureSetup(d, g, role, console), nil
	}
	return StoreSetup{}, errors.New("an S3 destination's customer part is its role's trust and permissions policies")
}

// errNoAccess: a destination at a custom endpoint without destination.gcs
// or destination.azure is reached without credentials (an emulator), and
// the customer grants nothing.
func errNoAccess(d account.Destination) error {
	return fmt.Errorf("%s at endpoint %s names no destination.%s: it is reached without credentials, and there is nothing for the customer to grant", d.URI(""), d.Endpoint, d.Kind())
}

// consoleReads is what the console does with a destination, said where the
// customer trusts its role.
const consoleReads = "daybook's web console only reads there (a partition's manifests)"

func gcsSetup(d account.Destination, role arn.ARN, console *arn.ARN) StoreSetup {
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
	trusted, condition := "its exporter role only", "attribute.aws_role=='"+assumedRole(role)+"'"
	if console != nil {
		trusted = "its exporter and console roles only"
		condition = "attribute.aws_role in ['" + assumedRole(role) + "', '" + assumedRole(*console) + "']"
	}
	s.Steps = []SetupStep{
		{customer, "Create a workload identity pool (once; skip if it exists)",
			fmt.Sprintf("gcloud iam workload-identity-pools create %s%s --location=global --display-name=daybook", pool, poolProject)},
		{customer, "Add an AWS provider trusting daybook's AWS account " + role.AccountID + ", for " + trusted,
			fmt.Sprintf("gcloud iam workload-identity-pools providers create-aws %s%s --location=global --workload-identity-pool=%s --account-id=%s --attribute-condition=%q",
				provider, poolProject, pool, role.AccountID, condition)},
		{customer, "Create the service account daybook writes as (skip if it exists)",
			fmt.Sprintf("gcloud iam service-accounts create %s%s --display-name=daybook", strings.Split(sa, "@")[0], project)},
		bucketBinding,
		{customer, "Let daybook's exporter role act as the service account",
			fmt.Sprintf("gcloud iam service-accounts add-iam-policy-binding %s%s --role=roles/iam.workloadIdentityUser --member=%q",
				sa, project, gcpauth.PrincipalSet(a.WorkloadIdentityProvider, role.String()))},
	}
	if console != nil {
		s.Steps = append(s.Steps, SetupStep{customer, "Let daybook's console role act as the service account too (" + consoleReads + ", asking Google only for read-only tokens, devstorage.read_only)",
			fmt.Sprintf("gcloud iam service-accounts add-iam-policy-binding %s%s --role=roles/iam.workloadIdentityUser --member=%q",
				sa, project, gcpauth.PrincipalSet(a.WorkloadIdentityProvider, console.String()))})
	}
	return s
}

// assumedRole is attribute.aws_role of role's sessions in Google's default
// AWS attribute mapping: the assumed-role ARN without the session name.
func assumedRole(role arn.ARN) string {
	name := role.Resource[strings.LastIndex(role.Resource, "/")+1:]
	return "arn:" + role.Partition + ":sts::" + role.AccountID + ":assumed-role/" + name
}

func azureSetup(d account.Destination, g StoreGrant, role arn.ARN, console *arn.ARN) StoreSetup {
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
	credential := func(name, subject, description string) string {
		cred, _ := json.Marshal(struct {
			Name        string   `json:"name"`
			Issuer      string   `json:"issuer"`
			Subject     string   `json:"subject"`
			Description string   `json:"description"`
			Audiences   []string `json:"audiences"`
		}{name, issuer, subject, description, []string{azureauth.Audience}})
		return fmt.Sprintf("az ad app federated-credential create --id %s --parameters '%s'", a.ClientID, cred)
	}
	steps = append(steps,
		SetupStep{"customer", "Register the application daybook signs in as (skip if it exists; its appId is destination.azure.client_id) and its service principal",
			"az ad sp create --id " + a.ClientID},
		SetupStep{"customer", "Trust daybook's exporter role: a federated credential for the tokens AWS issues it",
			credential(name, role.String(), "daybook exports")})
	if console != nil {
		steps = append(steps, SetupStep{"customer", "Trust daybook's console role too: a second federated credential, since Entra ID matches a token's subject exactly, one credential per role (" + consoleReads + ")",
			credential(name+"-console", console.String(), "daybook console (reads)")})
	}
	s.Steps = append(steps,
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
