package azureauth_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
)

// blobError is the error azblob returns for a Blob Storage response:
// azcore's ResponseError of the status, the x-ms-error-code header and
// the XML body, as the service sends them.
func blobError(status int, code, message string) error {
	body := `<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code + `</Code><Message>` + message +
		"\nRequestId:6f3b1c2e-001e-0042-5b2a-0a1b2c000000\nTime:2026-12-01T10:00:00.0000000Z</Message></Error>"
	u, _ := url.Parse("https://acme.blob.core.windows.net/exports/daybook/x")
	return runtime.NewResponseError(&http.Response{StatusCode: status, Status: http.StatusText(status),
		Header: http.Header{"X-Ms-Error-Code": {code}}, Body: io.NopCloser(strings.NewReader(body)),
		Request: &http.Request{Method: http.MethodPut, URL: u}})
}

// TestExplainBlobErrors: each Blob Storage error (the codes and messages
// the service documents) in words naming the role or setting to change.
func TestExplainBlobErrors(t *testing.T) {
	fed := azureauth.Target{StorageAccount: "acme", Container: "exports", Access: federated}
	sas := azureauth.Target{StorageAccount: "acme", Container: "exports", Access: account.AzureAccess{CredentialMode: account.CredentialSecret}}
	cases := []struct {
		name   string
		err    error
		target azureauth.Target
		want   []string
	}{
		{"no data role", blobError(403, "AuthorizationPermissionMismatch", "This request is not authorized to perform this operation using this permission."), fed,
			[]string{"the application " + client + " has no data role on container exports of storage account acme",
				`az role assignment create --assignee ` + client + ` --role "Storage Blob Data Contributor" --scope "/subscriptions/<SUBSCRIPTION_ID>/resourceGroups/<RESOURCE_GROUP>/providers/Microsoft.Storage/storageAccounts/acme/blobServices/default/containers/exports"`}},
		{"SAS without the permission", blobError(403, "AuthorizationPermissionMismatch", "This request is not authorized to perform this operation using this permission."), sas,
			[]string{"the SAS lacks a permission", "sp=racwdl"}},
		{"firewall", blobError(403, "AuthorizationFailure", "This request is not authorized to perform this operation."), fed,
			[]string{"firewall or network rules"}},
		{"expired SAS", blobError(403, "AuthenticationFailed", "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."), sas,
			[]string{"refused the SAS: it expired"}},
		{"shared key disabled", blobError(403, "KeyBasedAuthenticationNotPermitted", "Key based authentication is not permitted on this storage account."), sas,
			[]string{"does not allow shared key authorization"}},
		{"no container", blobError(404, "ContainerNotFound", "The specified container does not exist."), fed,
			[]string{"container exports of storage account acme does not exist"}},
		{"create-if-absent refused", blobError(409, "BlobAlreadyExists", "The specified blob already exists."), fed,
			[]string{"exists already"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := azureauth.Explain(c.err, c.target)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("Explain = %q, want it to contain %q", got, w)
				}
			}
		})
	}
	if got := azureauth.Explain(io.ErrUnexpectedEOF, fed); got != "" {
		t.Errorf("an unknown error explained as %q", got)
	}
}

// TestExplainFederationErrors: the errors the real azidentity and AWS SDK
// return for each refusal of the token endpoints (the fakes answer with
// the services' payloads) in words.
func TestExplainFederationErrors(t *testing.T) {
	cases := []struct {
		name string
		set  func(*fakes)
		want string
	}{
		{"no matching credential", func(f *fakes) {
			f.entra.Apps[client].Credentials[0].Subject = "arn:aws:iam::" + deployment + ":role/other"
		},
			"no federated credential of application " + client + " in tenant " + tenant + " matches daybook's token (issuer ISSUER, subject " + roleARN},
		{"wrong audience", func(f *fakes) { f.entra.Apps[client].Credentials[0].Audiences = []string{"api://other"} },
			`its audiences must be ["api://AzureADTokenExchange"]`},
		{"no such application", func(f *fakes) { delete(f.entra.Apps, client) }, "does not exist (check destination.azure.tenant_id and client_id)"},
		{"federation off", func(f *fakes) { f.sts.Disabled = true }, "aws iam enable-outbound-web-identity-federation"},
		{"role may not mint", func(f *fakes) { f.sts.AllowedAudiences = nil }, "may not call sts:GetWebIdentityToken"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakes(t)
			c.set(f)
			cr, err := f.fed.Credentials(context.Background(), federated)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cr.Token.GetToken(context.Background(), tokenOptions)
			words := azureauth.Explain(err, azureauth.Target{StorageAccount: "acme", Container: "exports", Access: federated, Issuer: "ISSUER", Subject: roleARN})
			if !strings.Contains(words, c.want) {
				t.Errorf("error %v\nexplained %q, want it to contain %q", err, words, c.want)
			}
		})
	}
}
