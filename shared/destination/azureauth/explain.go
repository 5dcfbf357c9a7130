package azureauth

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/daybook-dev/daybook/shared/account"
)

// Failures in words: what a failed call to Blob Storage, to Entra ID or to
// AWS STS means for the customer, naming the role assignment, credential
// or setting to fix.
//
// Payload shapes:
//
//	Blob Storage:  https://learn.microsoft.com/rest/api/storageservices/blob-service-error-codes
//	               https://learn.microsoft.com/rest/api/storageservices/common-rest-api-error-codes
//	               (the x-ms-error-code header and <Error><Code>AuthorizationPermissionMismatch</Code>
//	               <Message>This request is not authorized to perform this operation using this
//	               permission. ...</Message></Error>; azcore.ResponseError.ErrorCode)
//	Entra ID:      https://learn.microsoft.com/entra/identity-platform/reference-error-codes
//	               ({"error": "invalid_client", "error_description": "AADSTS70021: No matching
//	               federated identity record found for presented assertion. ...", "error_codes": [70021]})
//	AWS STS:       https://docs.aws.amazon.com/STS/latest/APIReference/API_GetWebIdentityToken.html#API_GetWebIdentityToken_Errors

// Target is what an explanation names.
type Target struct {
	StorageAccount, Container string
	Access                    account.AzureAccess
	// Issuer and Subject are what daybook's token carries (the deployment
	// account's issuer URL, the exporter role's ARN), when known.
	Issuer, Subject string
}

// BlobRole is the role the customer assigns daybook's application on the
// container.
// https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/storage#storage-blob-data-contributor
const BlobRole = "Storage Blob Data Contributor"

// ContainerScope is the role assignment scope of a container.
// https://learn.microsoft.com/azure/storage/blobs/assign-azure-role-data-access
func ContainerScope(storageAccount, container string) string {
	return "/subscriptions/<SUBSCRIPTION_ID>/resourceGroups/<RESOURCE_GROUP>/providers/Microsoft.Storage/storageAccounts/" +
		storageAccount + "/blobServices/default/containers/" + container
}

var aadstsRE = regexp.MustCompile(`AADSTS(\d+)`)

// Explain says in words what err means and what to change; "" for an error
// it does not recognize.
func Explain(err error, t Target) string {
	if err == nil {
		return ""
	}
	where := fmt.Sprintf("container %s of storage account %s", t.Container, t.StorageAccount)
	assign := fmt.Sprintf("assign it %s on the container: az role assignment create --assignee %s --role %q --scope %q",
		BlobRole, cmp.Or(t.Access.ClientID, "<CLIENT_ID>"), BlobRole, ContainerScope(t.StorageAccount, t.Container))
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		secret := t.Access.Mode() == account.CredentialSecret
		switch re.ErrorCode {
		case "AuthorizationPermissionMismatch":
			if secret {
				return fmt.Sprintf("the SAS lacks a permission this step needs on %s: create one with sp=racwdl", where)
			}
			return fmt.Sprintf("the application %s has no data role on %s: %s", t.Access.ClientID, where, assign)
		case "AuthorizationFailure":
			return fmt.Sprintf("%s refused the request before checking roles: its firewall or network rules do not admit daybook (allow public network access, or the deployment's addresses)", where)
		case "AuthorizationResourceTypeMismatch", "AuthorizationServiceMismatch":
			return fmt.Sprintf("the SAS is not valid for this kind of request on %s: use a container SAS (sr=c) or an account SAS for the blob service with containers and objects", where)
		case "AuthenticationFailed":
			if secret {
				return fmt.Sprintf("%s refused the SAS: it expired, was revoked (its key rotated), or is for another account", where)
			}
			return fmt.Sprintf("%s refused daybook's token (%s)", where, firstLine(re.Error()))
		case "KeyBasedAuthenticationNotPermitted":
			return fmt.Sprintf("storage account %s does not allow shared key authorization, which signs a SAS made with an account key: use federation (credential_mode federated)", t.StorageAccount)
		case "ContainerNotFound":
			return fmt.Sprintf("%s does not exist", where)
		case "ResourceNotFound", "AccountIsDisabled":
			return fmt.Sprintf("storage account %s is not reachable (%s)", t.StorageAccount, re.ErrorCode)
		case "BlobAlreadyExists", "ConditionNotMet":
			return fmt.Sprintf("the blob exists already (a create-if-absent refused, as it must in %s)", where)
		}
		return ""
	}
	msg := err.Error()
	if m := aadstsRE.FindStringSubmatch(msg); m != nil {
		app := fmt.Sprintf("application %s in tenant %s", t.Access.ClientID, t.Access.TenantID)
		switch m[1] {
		case "70021":
			return fmt.Sprintf("no federated credential of %s matches daybook's token (issuer %s, subject %s, audience %s): az ad app federated-credential create --id %s --parameters (see the setup daybook account test prints)",
				app, cmp.Or(t.Issuer, "the deployment's issuer URL"), cmp.Or(t.Subject, "the exporter role's ARN"), Audience, t.Access.ClientID)
		case "700212", "700211", "700213":
			return fmt.Sprintf("the federated credential of %s does not accept daybook's token as it is (audience %s, issuer %s): its audiences must be [%q]", app, Audience, cmp.Or(t.Issuer, "the deployment's issuer URL"), Audience)
		case "700016", "90002", "900023":
			return fmt.Sprintf("%s does not exist (check destination.azure.tenant_id and client_id)", app)
		case "7000112", "7000114":
			return fmt.Sprintf("%s is disabled", app)
		case "700024":
			return "Entra ID found daybook's token outside its valid time: the deployment's clock is off, or the token was delayed"
		}
		return fmt.Sprintf("Entra ID refused daybook's token for %s: AADSTS%s", app, m[1])
	}
	switch {
	case strings.Contains(msg, "OutboundWebIdentityFederationDisabled"):
		return "outbound identity federation is not enabled in the deployment's AWS account: aws iam enable-outbound-web-identity-federation (once per account)"
	case strings.Contains(msg, "sts:GetWebIdentityToken") && strings.Contains(msg, "not authorized"):
		return "the exporter's role may not call sts:GetWebIdentityToken for audience " + Audience + ": deploy this release's template (its OutboundIdentityTokens statement)"
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
