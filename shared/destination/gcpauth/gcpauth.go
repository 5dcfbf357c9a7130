// Package gcpauth gets daybook the Google credentials a destination in
// Google Cloud Storage is written with (destination.gcs), without a
// long-lived secret by default.
//
// Federated (the default): Workload Identity Federation with an AWS
// provider. The customer's workload identity pool has a provider trusting
// the deployment's AWS account, and the customer's service account lets the
// exporter's role impersonate it (roles/iam.workloadIdentityUser for the
// principalSet of that role). For a token daybook
//
//  1. signs an AWS STS GetCallerIdentity request with its own AWS
//     credentials (the Lambda's role: given as a supplier, so the library
//     never looks for the EC2 metadata service), with the header
//     x-goog-cloud-target-resource naming the provider, and sends it,
//     unsent to AWS, as the subject token of an OAuth 2.0 token exchange
//     to Google's STS (POST https://sts.googleapis.com/v1/token: grant_type
//     token-exchange, audience //iam.googleapis.com/<provider>,
//     subject_token_type urn:ietf:params:aws:token-type:aws4_request, scope
//     cloud-platform); Google's STS has AWS check the signature and answers
//     with a federated token (about an hour);
//  2. with that token, calls IAM Credentials generateAccessToken for the
//     customer's service account (scope devstorage.read_write, or
//     devstorage.read_only for a reader: Federation.Scope; lifetime
//     Lifetime, at most an hour) and writes with the access token it gets.
//
// golang.org/x/oauth2/google/externalaccount does both steps and caches
// each token until shortly before it expires; TokenSource adds a refresh
// margin so a multipart upload never signs with a token about to expire.
//
//	https://cloud.google.com/iam/docs/workload-identity-federation-with-other-clouds
//	https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token
//	https://cloud.google.com/iam/docs/reference/credentials/rest/v1/projects.serviceAccounts/generateAccessToken
//
// Secret (credential_mode secret): the AWS Secrets Manager secret the
// account names holds a service account key (the JSON `gcloud iam
// service-accounts keys create` writes), from which a self-signed JWT is
// exchanged at Google's OAuth 2.0 token endpoint. An HMAC key (the JSON
// `gcloud storage hmac create --format=json` prints) is refused, naming
// why: it signs requests to Cloud Storage's XML API only, and daybook
// writes through the JSON API (shared/bucket/gcs), whose guarantees (the
// CRC32C GCS verifies on every upload, ifGenerationMatch=0 for the
// Iceberg commits, kmsKeyName, one multipart protocol) the XML API keeps
// otherwise or not at all (no multi-object delete; If-None-Match only on
// reads).
package gcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"golang.org/x/oauth2/google/externalaccount"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination/storekey"
)

// Scope is the OAuth 2.0 scope of the tokens daybook writes a bucket with:
// read and write of objects, nothing else.
// https://cloud.google.com/storage/docs/oauth-scopes
const Scope = "https://www.googleapis.com/auth/devstorage.read_write"

// ReadOnlyScope is the scope of a reader's tokens (the console): objects
// read and listed, never written, whatever the service account may do.
const ReadOnlyScope = "https://www.googleapis.com/auth/devstorage.read_only"

// Google's endpoints. Tests point Endpoints at fakes; an account never
// chooses them.
const (
	GoogleSTS            = "https://sts.googleapis.com/v1/token"
	GoogleIAMCredentials = "https://iamcredentials.googleapis.com/v1/"
	GoogleOAuth2         = "https://oauth2.googleapis.com/token"
	// SubjectTokenType is the token type of a signed AWS request.
	SubjectTokenType = "urn:ietf:params:aws:token-type:aws4_request"
)

// DefaultLifetime is how long an impersonated access token lives: the most
// generateAccessToken gives without an organization policy exception.
const DefaultLifetime = time.Hour

// RefreshMargin is how long before it expires a token is replaced.
const RefreshMargin = 5 * time.Minute

// Endpoints are where Google's services are; the zero value is Google's.
type Endpoints struct {
	STS            string // GoogleSTS
	IAMCredentials string // GoogleIAMCredentials, ending in /
	OAuth2         string // GoogleOAuth2
}

func (e Endpoints) withDefaults() Endpoints {
	if e.STS == "" {
		e.STS = GoogleSTS
	}
	if e.IAMCredentials == "" {
		e.IAMCredentials = GoogleIAMCredentials
	}
	if e.OAuth2 == "" {
		e.OAuth2 = GoogleOAuth2
	}
	return e
}

// Federation is the deployment's side of the exchange, built once in
// main.go.
type Federation struct {
	// AWS is daybook's own AWS identity: the function's credentials
	// (aws.Config.Credentials). Their role is the one the customer trusts.
	AWS aws.CredentialsProvider
	// Region is the deployment's AWS region: the regional STS endpoint the
	// signed GetCallerIdentity request names.
	Region string
	// HTTPClient calls Google's endpoints (nil: a client with a 30-second
	// timeout).
	HTTPClient *http.Client
	// Endpoints are Google's (zero value) or, in tests, fakes.
	Endpoints Endpoints
	// Lifetime is the impersonated token's lifetime (0: DefaultLifetime;
	// at most an hour).
	Lifetime time.Duration
	// Keys reads the secret of an account in credential_mode secret.
	Keys storekey.Reader
	// Scope is the OAuth 2.0 scope asked for, impersonating or with a key
	// ("": Scope, read and write; a reader sets ReadOnlyScope).
	Scope string
}

func (f *Federation) scope() string {
	if f.Scope != "" {
		return f.Scope
	}
	return Scope
}

// ErrSecret is wrapped by every error about a secret's content; the
// message never holds the secret.
var ErrSecret = errors.New("gcs key secret")

// Credentials returns the token source of a GCS destination's requests
// (OAuth 2.0 access tokens of the customer's service account, for the JSON
// API). Federated, it makes no request: the first token is fetched on
// first use, and each refresh runs on the context ctx (keep it alive as
// long as the credentials; it carries the HTTP client). In credential_mode
// secret it reads the secret now.
func (f *Federation) Credentials(ctx context.Context, g account.GCSAccess) (oauth2.TokenSource, error) {
	ctx = context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, f.httpClient())
	ep := f.Endpoints.withDefaults()
	switch g.Mode() {
	case account.CredentialFederated:
		return f.federated(ctx, g, ep)
	case account.CredentialSecret:
		v, err := f.Keys.Read(ctx, g.SecretARN)
		if err != nil {
			return nil, err
		}
		return parseSecret(ctx, v, g.SecretARN, ep, f.scope())
	default:
		return nil, fmt.Errorf("destination.gcs.credential_mode %q: want federated or secret", g.CredentialMode)
	}
}

func (f *Federation) httpClient() *http.Client {
	if f.HTTPClient != nil {
		return f.HTTPClient
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// ImpersonationURL is the generateAccessToken URL of a service account.
func ImpersonationURL(base, serviceAccount string) string {
	return base + "projects/-/serviceAccounts/" + url.PathEscape(serviceAccount) + ":generateAccessToken"
}

func (f *Federation) federated(ctx context.Context, g account.GCSAccess, ep Endpoints) (oauth2.TokenSource, error) {
	if f.AWS == nil || f.Region == "" {
		return nil, errors.New("gcs federation: the deployment's AWS credentials and region are not configured")
	}
	life := f.Lifetime
	if life == 0 {
		life = DefaultLifetime
	}
	if life < time.Minute || life > time.Hour {
		return nil, fmt.Errorf("gcs federation: token lifetime %s: want 1m to 1h", life)
	}
	ts, err := externalaccount.NewTokenSource(ctx, externalaccount.Config{
		Audience:                       g.Audience(),
		SubjectTokenType:               SubjectTokenType,
		TokenURL:                       ep.STS,
		ServiceAccountImpersonationURL: ImpersonationURL(ep.IAMCredentials, g.ServiceAccount),
		ServiceAccountImpersonationLifetimeSeconds: int(life / time.Second),
		Scopes:                         []string{f.scope()},
		AwsSecurityCredentialsSupplier: awsSupplier{creds: f.AWS, region: f.Region},
	})
	if err != nil {
		return nil, fmt.Errorf("gcs federation for %s: %w", g.ServiceAccount, err)
	}
	return oauth2.ReuseTokenSourceWithExpiry(nil, ts, RefreshMargin), nil
}

// awsSupplier hands the external account library daybook's own AWS
// credentials and region, so it never asks the EC2 metadata service.
type awsSupplier struct {
	creds  aws.CredentialsProvider
	region string
}

var _ externalaccount.AwsSecurityCredentialsSupplier = awsSupplier{}

func (s awsSupplier) AwsRegion(context.Context, externalaccount.SupplierOptions) (string, error) {
	return s.region, nil
}

func (s awsSupplier) AwsSecurityCredentials(ctx context.Context, _ externalaccount.SupplierOptions) (*externalaccount.AwsSecurityCredentials, error) {
	c, err := s.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("daybook's AWS credentials: %w", err)
	}
	return &externalaccount.AwsSecurityCredentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}, nil
}

// secretFile is the JSON a GCS key secret holds: a service account key
// (or, refused, the HMAC key `gcloud storage hmac create --format=json`
// prints).
type secretFile struct {
	Type        string `json:"type"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
	Kind        string `json:"kind"`
	Metadata    struct {
		AccessID string `json:"accessId"`
	} `json:"metadata"`
}

// parseSecret reads a secret's value as a service account key. A key's
// token_uri is ignored: tokens come from Google's endpoint (ep.OAuth2),
// never from a URL the secret names.
func parseSecret(ctx context.Context, v []byte, arn string, ep Endpoints, scope string) (oauth2.TokenSource, error) {
	var s secretFile
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, fmt.Errorf("%w %s: not JSON (want a service account key as gcloud iam service-accounts keys create writes it)", ErrSecret, arn)
	}
	switch {
	case s.Type == "service_account":
		if s.ClientEmail == "" || s.PrivateKey == "" {
			return nil, fmt.Errorf("%w %s: a service account key without client_email or private_key", ErrSecret, arn)
		}
		cfg, err := google.JWTConfigFromJSON(v, scope)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v", ErrSecret, arn, errors.Unwrap(err))
		}
		cfg.TokenURL = ep.OAuth2
		cfg.Audience = GoogleOAuth2 // what Google's endpoint checks, wherever it is reached
		return oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(ctx), RefreshMargin), nil
	case s.Kind == "storage#hmacKey" || s.Metadata.AccessID != "":
		return nil, fmt.Errorf("%w %s: an HMAC key signs Cloud Storage's XML API only, and daybook writes through the JSON API (for the CRC32C GCS verifies, create-if-absent and customer-managed keys): put a service account key of the same service account in the secret instead (gcloud iam service-accounts keys create key.json --iam-account=...)", ErrSecret, arn)
	case s.Type != "":
		return nil, fmt.Errorf("%w %s: a credential of type %q; only a service account key (type service_account) is read", ErrSecret, arn, s.Type)
	default:
		return nil, fmt.Errorf("%w %s: not a service account key", ErrSecret, arn)
	}
}
