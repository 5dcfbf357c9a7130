// Package azureauth gets daybook the credentials an Azure Blob Storage
// destination is written with (destination.azure), without a long-lived
// secret by default.
//
// Federated (the default): the customer's Microsoft Entra ID application
// has a federated identity credential trusting the token AWS STS issues
// daybook's exporter role (AWS outbound identity federation): issuer the
// deployment account's issuer URL, subject the role's ARN, audience
// api://AzureADTokenExchange. For a token daybook
//
//  1. calls sts:GetWebIdentityToken (regional endpoint; audience
//     api://AzureADTokenExchange, RS256, a 5-minute lifetime) and gets a
//     JWT signed by AWS: iss the account's issuer, sub the role ARN;
//  2. posts it to the tenant's token endpoint as a client assertion
//     (client_credentials grant, client_id the application, scope
//     https://storage.azure.com/.default); Entra ID fetches the issuer's
//     keys, checks the signature and the federated credential (issuer,
//     subject, audience, expiry) and answers with an access token (about
//     an hour), which azidentity caches and renews.
//
// The application holds a role on the container (Storage Blob Data
// Contributor), assigned by the customer.
//
//	https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_outbound_getting_started.html
//	https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_outbound_token_claims.html
//	https://learn.microsoft.com/entra/workload-id/workload-identity-federation-create-trust
//	https://learn.microsoft.com/entra/identity-platform/v2-oauth2-client-creds-grant-flow#third-case-access-token-request-with-a-federated-credential
//
// Secret (credential_mode secret): the AWS Secrets Manager secret the
// account names holds a SAS token for the container, with the permissions
// an export needs (read, add, create, write, delete, list).
package azureauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination/storekey"
)

// Audience is the aud of the AWS token: what Entra ID expects of a
// federated credential's assertion.
const Audience = "api://AzureADTokenExchange"

// Scope is the scope of the access token: Azure Storage.
const Scope = "https://storage.azure.com/.default"

// SigningAlgorithm is the AWS token's signature algorithm.
const SigningAlgorithm = "RS256"

// DefaultAssertionLifetime is the AWS token's lifetime: it is used at once,
// so STS's default 5 minutes.
const DefaultAssertionLifetime = 5 * time.Minute

// WebIdentityAPI is the AWS STS call azureauth makes, with the SDK's
// signature. The client must use a regional endpoint (the global one does
// not serve it) and daybook's own credentials.
type WebIdentityAPI interface {
	GetWebIdentityToken(ctx context.Context, in *sts.GetWebIdentityTokenInput, optFns ...func(*sts.Options)) (*sts.GetWebIdentityTokenOutput, error)
}

var _ WebIdentityAPI = (*sts.Client)(nil)

// Federation is the deployment's side, built once in main.go.
type Federation struct {
	// STS issues daybook's web identity tokens.
	STS WebIdentityAPI
	// AssertionLifetime is the AWS token's lifetime (0:
	// DefaultAssertionLifetime; 1 to 60 minutes).
	AssertionLifetime time.Duration
	// AuthorityHost is Entra ID's (empty: the public cloud's); tests point
	// it at a fake.
	AuthorityHost string
	// Transport sends Entra ID's requests (nil: azcore's default).
	Transport policy.Transporter
	// Keys reads the secret of an account in credential_mode secret.
	Keys storekey.Reader
}

// Credentials are what an Azure Blob client is built with: exactly one is
// set.
type Credentials struct {
	// Token is a token credential for azblob (federated).
	Token azcore.TokenCredential
	// SAS is a SAS token (the query string, without "?") to append to the
	// container's URL (secret).
	SAS *SAS
}

// SAS is a shared access signature read from a secret.
type SAS struct {
	// Query is the SAS token, without the leading "?".
	Query string
	// Expiry is its se (signed expiry).
	Expiry time.Time
	// Permissions is its sp.
	Permissions string
}

// Errors.
var (
	// ErrSecret is wrapped by every error about a secret's content; the
	// message never holds the secret.
	ErrSecret = errors.New("azure SAS secret")
)

// Credentials returns the credentials of an Azure destination. Federated,
// it makes no request: tokens are fetched on use. In credential_mode secret
// it reads the secret now.
func (f *Federation) Credentials(ctx context.Context, a account.AzureAccess) (Credentials, error) {
	switch a.Mode() {
	case account.CredentialFederated:
		c, err := f.federated(a)
		if err != nil {
			return Credentials{}, err
		}
		return Credentials{Token: c}, nil
	case account.CredentialSecret:
		v, err := f.Keys.Read(ctx, a.SecretARN)
		if err != nil {
			return Credentials{}, err
		}
		s, err := ParseSAS(string(v))
		if err != nil {
			return Credentials{}, fmt.Errorf("%w %s: %v", ErrSecret, a.SecretARN, err)
		}
		return Credentials{SAS: s}, nil
	default:
		return Credentials{}, fmt.Errorf("destination.azure.credential_mode %q: want federated or secret", a.CredentialMode)
	}
}

func (f *Federation) federated(a account.AzureAccess) (azcore.TokenCredential, error) {
	if f.STS == nil {
		return nil, errors.New("azure federation: the deployment's STS client is not configured")
	}
	life := f.AssertionLifetime
	if life == 0 {
		life = DefaultAssertionLifetime
	}
	if life < time.Minute || life > time.Hour {
		return nil, fmt.Errorf("azure federation: assertion lifetime %s: want 1m to 1h", life)
	}
	opts := &azidentity.ClientAssertionCredentialOptions{}
	opts.Transport = f.Transport
	if f.AuthorityHost != "" {
		opts.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: f.AuthorityHost}
		// Another authority host is a fake's (or a sovereign cloud's):
		// it is not in Entra ID's public instance metadata.
		opts.DisableInstanceDiscovery = true
	}
	c, err := azidentity.NewClientAssertionCredential(a.TenantID, a.ClientID, func(ctx context.Context) (string, error) {
		out, err := f.STS.GetWebIdentityToken(ctx, &sts.GetWebIdentityTokenInput{
			Audience:         []string{Audience},
			SigningAlgorithm: aws.String(SigningAlgorithm),
			DurationSeconds:  aws.Int32(int32(life / time.Second)),
		})
		if err != nil {
			return "", fmt.Errorf("sts:GetWebIdentityToken for audience %s: %w", Audience, err)
		}
		return aws.ToString(out.WebIdentityToken), nil
	}, opts)
	if err != nil {
		return nil, fmt.Errorf("azure federation for application %s in tenant %s: %w", a.ClientID, a.TenantID, err)
	}
	return c, nil
}

// sasPermissions are the SAS permissions an export uses: read (verify,
// generations), add and create (new blobs and blocks), write (commit a
// block list), delete (stale files, the connection test), list (the
// partition).
// https://learn.microsoft.com/rest/api/storageservices/create-service-sas#permissions-for-a-directory-container-or-blob
var sasPermissions = []struct {
	letter byte
	name   string
}{{'r', "read"}, {'a', "add"}, {'c', "create"}, {'w', "write"}, {'d', "delete"}, {'l', "list"}}

// ParseSAS reads a SAS token (with or without its leading "?"), or a
// container URL carrying one, and checks it is one an export can use: a
// signature, a version, an expiry, HTTPS only when it says, scoped to a
// container (sr=c) or an account SAS for blobs, and every permission an
// export needs. The error names what is wrong and never the signature.
func ParseSAS(v string) (*SAS, error) {
	v = strings.TrimSpace(v)
	if u, err := url.Parse(v); err == nil && u.Scheme != "" {
		v = u.RawQuery
	}
	v = strings.TrimPrefix(v, "?")
	q, err := url.ParseQuery(v)
	if err != nil {
		return nil, errors.New("not a SAS token (a query string such as sv=...&sp=...&sig=...)")
	}
	for _, k := range []string{"sv", "se", "sp", "sig"} {
		if q.Get(k) == "" {
			return nil, fmt.Errorf("not a SAS token: no %s", k)
		}
	}
	switch {
	case q.Get("sr") == "c":
	case q.Get("sr") != "":
		return nil, fmt.Errorf("sr=%s: want a container SAS (sr=c), not one for a single blob or directory", q.Get("sr"))
	case q.Get("ss") != "" && !strings.Contains(q.Get("ss"), "b"):
		return nil, fmt.Errorf("ss=%s: an account SAS without the blob service (b)", q.Get("ss"))
	case q.Get("ss") != "" && !(strings.Contains(q.Get("srt"), "c") && strings.Contains(q.Get("srt"), "o")):
		return nil, fmt.Errorf("srt=%s: an account SAS must cover containers and objects (c and o)", q.Get("srt"))
	case q.Get("ss") == "":
		return nil, errors.New("neither a container SAS (sr=c) nor an account SAS (ss)")
	}
	exp, err := parseSASTime(q.Get("se"))
	if err != nil {
		return nil, fmt.Errorf("se=%s: %v", q.Get("se"), err)
	}
	sp := q.Get("sp")
	var missing []string
	for _, p := range sasPermissions {
		if !strings.Contains(sp, string(p.letter)) {
			missing = append(missing, fmt.Sprintf("%s (%c)", p.name, p.letter))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sp=%s lacks %s, which an export needs", sp, strings.Join(missing, ", "))
	}
	if spr := q.Get("spr"); spr != "" && !slices.Contains(strings.Split(spr, ","), "https") {
		return nil, fmt.Errorf("spr=%s: the SAS must allow HTTPS", spr)
	}
	return &SAS{Query: v, Expiry: exp, Permissions: sp}, nil
}

// parseSASTime reads a SAS time: ISO 8601 UTC, with or without seconds.
// https://learn.microsoft.com/rest/api/storageservices/formatting-datetime-values
func parseSASTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04Z", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a UTC time such as 2027-01-01T00:00:00Z")
}
