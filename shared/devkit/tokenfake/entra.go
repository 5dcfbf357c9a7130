package tokenfake

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Entra is Microsoft Entra ID's tenant discovery document and v2.0 token
// endpoint, for the client credentials grant with a client assertion from
// a federated identity credential. The assertion is checked as Entra ID
// checks it: the issuer's OpenID configuration and keys are fetched from
// the issuer (HTTPClient), the signature verified, and the claims matched
// against the application's federated credentials: iss and sub exactly,
// aud among the credential's audiences, exp in the future.
//
//	https://learn.microsoft.com/entra/identity-platform/v2-oauth2-client-creds-grant-flow#third-case-access-token-request-with-a-federated-credential
//	https://learn.microsoft.com/entra/workload-id/workload-identity-federation-create-trust
type Entra struct {
	// Base is the fake's own URL (the authority host).
	Base string
	// Apps are the applications, by client id.
	Apps map[string]EntraApp
	// HTTPClient fetches issuers' discovery documents.
	HTTPClient *http.Client
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu     sync.Mutex
	n      int
	log    []Exchange
	issued map[string]string // access token: its application (client id)
}

// Issued says whether token is an Azure Storage access token the fake
// issued, and to which application.
func (e *Entra) Issued(token string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	app, ok := e.issued[token]
	return app, ok
}

// EntraApp is an application registration: its tenant and federated
// identity credentials.
type EntraApp struct {
	Tenant      string
	Credentials []FederatedCredential
}

// FederatedCredential is a federated identity credential on an
// application.
type FederatedCredential struct {
	Name, Issuer, Subject string
	Audiences             []string
}

func (e *Entra) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Exchanges returns the requests answered so far, in order.
func (e *Entra) Exchanges() []Exchange {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

func (e *Entra) record(x Exchange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, x)
}

// ServeHTTP serves /{tenant}/v2.0/.well-known/openid-configuration and
// /{tenant}/oauth2/v2.0/token.
func (e *Entra) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && rest == "v2.0/.well-known/openid-configuration":
		base := e.Base + "/" + tenant
		writeJSON(w, 200, map[string]any{
			"token_endpoint":                        base + "/oauth2/v2.0/token",
			"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
			"issuer":                                base + "/v2.0",
			"jwks_uri":                              base + "/discovery/v2.0/keys",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
			"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
			"tenant_region_scope":                   "EU",
		})
	case r.Method == http.MethodPost && rest == "oauth2/v2.0/token":
		e.token(w, r, tenant)
	default:
		http.NotFound(w, r)
	}
}

// fail answers as Entra ID does: an OAuth error with an AADSTS code.
func (e *Entra) fail(w http.ResponseWriter, x Exchange, status int, code string, aadsts int, msg string) {
	desc := fmt.Sprintf("AADSTS%d: %s", aadsts, msg)
	x.Status, x.Problem = status, code+": "+desc
	e.record(x)
	writeJSON(w, status, map[string]any{"error": code, "error_description": desc, "error_codes": []int{aadsts}})
}

const jwtBearerAssertion = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

func (e *Entra) token(w http.ResponseWriter, r *http.Request, tenant string) {
	x := Exchange{Endpoint: "login.microsoftonline.com token", Fields: map[string]string{"tenant": tenant}}
	if err := r.ParseForm(); err != nil {
		e.fail(w, x, 400, "invalid_request", 900144, err.Error())
		return
	}
	f := r.PostForm
	for _, k := range []string{"grant_type", "client_id", "client_assertion_type", "scope"} {
		x.Fields[k] = f.Get(k)
	}
	app, ok := e.Apps[f.Get("client_id")]
	switch {
	case f.Get("grant_type") != "client_credentials":
		e.fail(w, x, 400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type")
		return
	case f.Get("client_assertion_type") != jwtBearerAssertion:
		e.fail(w, x, 400, "invalid_request", 50027, "client_assertion_type must be "+jwtBearerAssertion)
		return
	case !ok || app.Tenant != tenant:
		e.fail(w, x, 400, "unauthorized_client", 700016, fmt.Sprintf("Application with identifier '%s' was not found in the directory '%s'.", f.Get("client_id"), tenant))
		return
	case f.Get("scope") == "":
		e.fail(w, x, 400, "invalid_scope", 1002012, "The provided value for scope is not valid.")
		return
	}
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(f.Get("client_assertion"), &claims, func(t *jwt.Token) (any, error) {
		iss, _ := t.Claims.GetIssuer()
		kid, _ := t.Header["kid"].(string)
		return e.issuerKey(r.Context(), iss, kid)
	}, jwt.WithValidMethods([]string{"RS256", "ES384"}), jwt.WithTimeFunc(e.now), jwt.WithExpirationRequired())
	x.Fields["iss"], x.Fields["sub"], x.Fields["aud"] = claims.Issuer, claims.Subject, strings.Join(claims.Audience, " ")
	if claims.ExpiresAt != nil {
		x.Fields["exp"] = claims.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if err != nil {
		if strings.Contains(err.Error(), "expired") || strings.Contains(err.Error(), "not valid yet") {
			e.fail(w, x, 400, "invalid_client", 700024, "Client assertion is not within its valid time range: "+err.Error())
			return
		}
		e.fail(w, x, 401, "invalid_client", 5002727, "Client assertion is invalid: "+err.Error())
		return
	}
	var match *FederatedCredential
	for i, c := range app.Credentials {
		if c.Issuer == claims.Issuer && c.Subject == claims.Subject {
			match = &app.Credentials[i]
		}
	}
	if match == nil {
		e.fail(w, x, 400, "invalid_client", 70021, fmt.Sprintf("No matching federated identity record found for presented assertion. Assertion Issuer: '%s'. Assertion Subject: '%s'. Assertion Audience: '%s'.",
			claims.Issuer, claims.Subject, strings.Join(claims.Audience, ",")))
		return
	}
	audOK := false
	for _, a := range claims.Audience {
		audOK = audOK || slices.Contains(match.Audiences, a)
	}
	if !audOK {
		e.fail(w, x, 400, "invalid_client", 700212, fmt.Sprintf("No matching federated identity record found for presented assertion audience '%s'.", strings.Join(claims.Audience, ",")))
		return
	}
	e.mu.Lock()
	e.n++
	tok := fmt.Sprintf("fake-storage-access-%d", e.n)
	if e.issued == nil {
		e.issued = map[string]string{}
	}
	e.issued[tok] = x.Fields["client_id"]
	e.mu.Unlock()
	x.Status, x.Fields["credential"], x.Fields["expires_in"] = 200, match.Name, "3599"
	e.record(x)
	writeJSON(w, 200, map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": tok})
}

// issuerKey reads the issuer's signing key kid as Entra ID does: its
// OpenID configuration, then the jwks_uri it names.
func (e *Entra) issuerKey(ctx context.Context, issuer, kid string) (any, error) {
	var conf struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := e.getJSON(ctx, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", &conf); err != nil {
		return nil, err
	}
	if conf.Issuer != issuer {
		return nil, fmt.Errorf("issuer %q's configuration names issuer %q", issuer, conf.Issuer)
	}
	var set struct {
		Keys []struct{ Kty, Kid, N, E string } `json:"keys"`
	}
	if err := e.getJSON(ctx, conf.JWKSURI, &set); err != nil {
		return nil, err
	}
	for _, k := range set.Keys {
		if k.Kid != kid || k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		eb, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("key %s: bad encoding", kid)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(eb).Int64())}, nil
	}
	return nil, fmt.Errorf("issuer %s has no key %q", issuer, kid)
}

func (e *Entra) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	c := e.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
