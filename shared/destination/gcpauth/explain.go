package gcpauth

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"golang.org/x/oauth2"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket/gcs"
)

// Failures in words: what a failed call to Cloud Storage (the GCS driver's
// *gcs.Error, the JSON API's error payload) or to Google's token endpoints
// means for the customer, naming the permission, role or
// setting to fix, as the S3 connection test names the missing s3: action.
//
// Payload shapes:
//
//	JSON API errors:  https://cloud.google.com/storage/docs/json_api/v1/status-codes
//	                  ({"error": {"code": 403, "message": "... does not have storage.objects.create access ...
//	                  Permission 'storage.objects.create' denied on resource (or it may not exist).",
//	                  "errors": [{"domain": "global", "reason": "forbidden", ...}]}})
//	STS errors:       https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token
//	                  ({"error": "invalid_target", "error_description": "..."}, RFC 6749 section 5.2)
//	IAM Credentials:  https://cloud.google.com/iam/docs/troubleshooting-access#service-account-impersonation
//	                  (403 PERMISSION_DENIED "Permission 'iam.serviceAccounts.getAccessToken' denied ...")

// Target is what an explanation names: the bucket, and who writes it.
type Target struct {
	Bucket string
	Access account.GCSAccess
	// Principal is the principalSet of daybook's exporter role in the
	// customer's pool (PrincipalSet), when known.
	Principal string
}

// ObjectRole is the role the customer grants daybook's service account on
// the bucket: create, read, list and delete objects, and multipart uploads.
// https://cloud.google.com/storage/docs/access-control/iam-roles
const ObjectRole = "roles/storage.objectUser"

var permissionRE = regexp.MustCompile(`Permission '([a-zA-Z.]+)' denied`)

// Explain says in words what err, from a call to bucket t.Bucket or to
// the token endpoints, means and what to grant. It returns "" for an error
// it does not recognize (the caller shows the error itself).
func Explain(err error, t Target) string {
	if err == nil {
		return ""
	}
	who := "the service account " + t.Access.ServiceAccount
	if t.Access.Mode() == account.CredentialSecret {
		who = "the key's service account"
	}
	grant := fmt.Sprintf("grant it %s on the bucket: gcloud storage buckets add-iam-policy-binding gs://%s --member=serviceAccount:%s --role=%s",
		ObjectRole, t.Bucket, cmp.Or(t.Access.ServiceAccount, "SERVICE_ACCOUNT_EMAIL"), ObjectRole)
	var ge *gcs.Error
	if errors.As(err, &ge) {
		reason := ge.Reason
		switch {
		case ge.Code == 403 && permissionRE.MatchString(ge.Message):
			perm := permissionRE.FindStringSubmatch(ge.Message)[1]
			return fmt.Sprintf("%s lacks %s on bucket %s: %s", who, perm, t.Bucket, grant)
		case ge.Code == 403 && (reason == "userProjectMissing" || strings.Contains(ge.Message, "requester pays")):
			return fmt.Sprintf("bucket %s is Requester Pays, and daybook names no billing project: turn Requester Pays off for it", t.Bucket)
		case ge.Code == 403 && reason == "retentionPolicyNotMet":
			return fmt.Sprintf("bucket %s has a retention policy that forbids deleting or replacing objects, which every export does (stale files, a re-export): remove the policy, or deliver to a bucket without one", t.Bucket)
		case ge.Code == 403:
			return fmt.Sprintf("%s may not do this on bucket %s: %s", who, t.Bucket, grant)
		case ge.Code == 401:
			return fmt.Sprintf("Cloud Storage refused daybook's token for %s (%s)", who, ge.Message)
		case ge.Code == 404 && strings.Contains(strings.ToLower(ge.Message), "bucket"):
			return fmt.Sprintf("bucket %s does not exist", t.Bucket)
		case ge.Code == 412:
			return fmt.Sprintf("the object exists already (a create-if-absent refused, as it must on bucket %s)", t.Bucket)
		}
		return ""
	}
	return explainToken(err, t)
}

// explainToken explains a failure to get a token: the STS exchange, the
// impersonation, or a key's JWT exchange.
func explainToken(err error, t Target) string {
	msg := err.Error()
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		msg = re.ErrorCode + " " + re.ErrorDescription + " " + msg
	}
	provider := t.Access.WorkloadIdentityProvider
	principal := cmp.Or(t.Principal, "principalSet://iam.googleapis.com/"+poolOf(provider)+"/attribute.aws_role/arn:aws:sts::DEPLOYMENT_ACCOUNT:assumed-role/EXPORTER_ROLE")
	switch {
	case strings.Contains(msg, "iam.serviceAccounts.getAccessToken"):
		return fmt.Sprintf("the service account %s does not let daybook's exporter role impersonate it: gcloud iam service-accounts add-iam-policy-binding %s --role=roles/iam.workloadIdentityUser --member=%q",
			t.Access.ServiceAccount, t.Access.ServiceAccount, principal)
	case strings.Contains(msg, "invalid_target"):
		return fmt.Sprintf("the workload identity provider %s does not exist, or it or its pool is disabled (gcloud iam workload-identity-pools providers describe)", provider)
	case strings.Contains(msg, "unauthorized_client"):
		return fmt.Sprintf("the workload identity provider %s refused daybook's AWS identity: its --account-id must be this deployment's AWS account, and its attribute condition must admit the exporter's role", provider)
	case strings.Contains(msg, "invalid_grant") && strings.Contains(msg, "Invalid JWT"):
		return "Google refused the service account key in the secret: it was deleted or disabled, or the key is malformed; create a new key and replace the secret's value"
	case strings.Contains(msg, "invalid_grant"):
		return fmt.Sprintf("Google's STS refused daybook's signed AWS request for provider %s: the provider must be an AWS provider (create-aws) trusting this deployment's account", provider)
	}
	return ""
}

// PrincipalSet is the member the customer binds roles/iam.workloadIdentityUser
// to: every session of the role roleARN (arn:aws:iam::<account>:role/<name>)
// through the provider's attribute.aws_role, in the provider's pool.
func PrincipalSet(provider, roleARN string) string {
	acct, name := roleParts(roleARN)
	return "principalSet://iam.googleapis.com/" + poolOf(provider) + "/attribute.aws_role/arn:aws:sts::" + acct + ":assumed-role/" + name
}

// poolOf is the pool of a provider's resource name: projects/N/locations/
// global/workloadIdentityPools/P.
func poolOf(provider string) string {
	if i := strings.Index(provider, "/providers/"); i >= 0 {
		return provider[:i]
	}
	return provider
}

// roleParts splits arn:aws:iam::<account>:role/<path/name> into the account
// and the name (the last path segment: an assumed-role ARN names the role
// without its path).
func roleParts(roleARN string) (acct, name string) {
	a, err := arn.Parse(roleARN)
	if err != nil {
		return "DEPLOYMENT_ACCOUNT", "EXPORTER_ROLE"
	}
	return a.AccountID, a.Resource[strings.LastIndex(a.Resource, "/")+1:]
}
