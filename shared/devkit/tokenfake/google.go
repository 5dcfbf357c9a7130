package tokenfake

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Google's token endpoints as the gcpauth flows use them. Each request is
// checked as Google checks it and recorded (Exchanges).
//
//	STS token exchange:   https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token
//	AWS subject token:    https://cloud.google.com/iam/docs/workload-identity-federation-with-other-clouds
//	generateAccessToken:  https://cloud.google.com/iam/docs/reference/credentials/rest/v1/projects.serviceAccounts/generateAccessToken
//	JWT bearer (SA keys): https://developers.google.com/identity/protocols/oauth2/service-account#authorizingrequests
type Google struct {
	// Providers are the workload identity pool providers, by full
	// resource name (//iam.googleapis.com/projects/N/locations/global/
	// workloadIdentityPools/P/providers/X): the AWS account each trusts.
	Providers map[string]string
	// AWSKeys are the AWS keys whose signed GetCallerIdentity requests
	// "AWS" accepts, by access key id.
	AWSKeys map[string]AWSKey
	// Bindings are, per service account email, the members granted
	// roles/iam.workloadIdentityUser on it (principalSet://... strings).
	Bindings map[string][]string
	// ServiceAccountKeys are the public keys of service account keys, by
	// client email.
	ServiceAccountKeys map[string]*rsa.PublicKey
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu        sync.Mutex
	n         int
	federated map[string]fedToken
	issued    map[string]string // access token: its service account
	exchanges []Exchange
}

// Issued says whether token is a Cloud Storage access token the fake
// issued (by generateAccessToken or for a service account key), and whose.
func (g *Google) Issued(token string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sa, ok := g.issued[token]
	return sa, ok
}

func (g *Google) issue(tok, sa string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.issued == nil {
		g.issued = map[string]string{}
	}
	g.issued[tok] = sa
}

type fedToken struct {
	principals []string
	expires    time.Time
}

// Exchange is one request a fake answered: which endpoint, what it was
// asked (audience, subject, scope, lifetime ...), and the outcome.
type Exchange struct {
	Endpoint string
	Fields   map[string]string
	Status   int
	Problem  string
}

// Exchanges returns the requests answered so far, in order.
func (g *Google) Exchanges() []Exchange {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.exchanges)
}

func (g *Google) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Paths of the Google fake's endpoints under its base URL.
const (
	GoogleSTSPath   = "/v1/token"
	GoogleIAMPath   = "/iamcredentials/v1/"
	GoogleOAuthPath = "/oauth2/token"
)

// ServeHTTP serves the three endpoints.
func (g *Google) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == GoogleSTSPath:
		g.sts(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, GoogleIAMPath):
		g.generateAccessToken(w, r)
	case r.Method == http.MethodPost && r.URL.Path == GoogleOAuthPath:
		g.jwtBearer(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (g *Google) record(e Exchange) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.exchanges = append(g.exchanges, e)
}

// oauthError answers as Google's STS and OAuth endpoints do.
func (g *Google) oauthError(w http.ResponseWriter, e Exchange, status int, code, desc string) {
	e.Status, e.Problem = status, code+": "+desc
	g.record(e)
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// apiError answers as Google's JSON APIs (IAM Credentials) do.
func (g *Google) apiError(w http.ResponseWriter, e Exchange, status int, state, msg string) {
	e.Status, e.Problem = status, state+": "+msg
	g.record(e)
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": state}})
}

const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeAWS4      = "urn:ietf:params:aws:token-type:aws4_request"
)

var stsHostRE = regexp.MustCompile(`^sts\.([a-z0-9-]+)\.amazonaws\.com$`)

// sts is the token exchange with a signed AWS GetCallerIdentity request.
func (g *Google) sts(w http.ResponseWriter, r *http.Request) {
	e := Exchange{Endpoint: "sts.googleapis.com/v1/token", Fields: map[string]string{}}
	if err := r.ParseForm(); err != nil {
		g.oauthError(w, e, 400, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	for _, k := range []string{"grant_type", "audience", "scope", "requested_token_type", "subject_token_type"} {
		e.Fields[k] = f.Get(k)
	}
	switch {
	case f.Get("grant_type") != grantTokenExchange:
		g.oauthError(w, e, 400, "unsupported_grant_type", "grant_type must be "+grantTokenExchange)
		return
	case f.Get("requested_token_type") != tokenTypeAccess:
		g.oauthError(w, e, 400, "invalid_request", "requested_token_type must be "+tokenTypeAccess)
		return
	case f.Get("subject_token_type") != tokenTypeAWS4:
		g.oauthError(w, e, 400, "invalid_request", "subject_token_type must be "+tokenTypeAWS4+" for an AWS provider")
		return
	case f.Get("scope") == "":
		g.oauthError(w, e, 400, "invalid_scope", "scope is required when exchanging an external credential")
		return
	}
	audience := f.Get("audience")
	account, ok := g.Providers[audience]
	if !ok {
		g.oauthError(w, e, 400, "invalid_target", "The target service indicated by the \"audience\" parameters is invalid. This might either be because the pool or provider is disabled or deleted or because it doesn't exist.")
		return
	}
	arn, region, err := g.subject(f.Get("subject_token"), audience)
	e.Fields["aws_region"] = region
	if err != nil {
		g.oauthError(w, e, 400, "invalid_grant", "The AWS request in the subject token is not valid: "+err.Error())
		return
	}
	e.Fields["subject"] = arn
	m := assumedRoleRE.FindStringSubmatch(arn)
	if m == nil || m[1] != account {
		g.oauthError(w, e, 403, "unauthorized_client", fmt.Sprintf("The caller %s is not in AWS account %s, which the provider trusts", arn, account))
		return
	}
	// The provider's default attribute mapping: google.subject is the
	// caller's ARN, attribute.aws_role its role session without the
	// session name.
	role := "arn:aws:sts::" + m[1] + ":assumed-role/" + m[2]
	pool := strings.TrimPrefix(audience[:strings.LastIndex(audience, "/providers/")], "//iam.googleapis.com/")
	principals := []string{
		"principal://iam.googleapis.com/" + pool + "/subject/" + arn,
		"principalSet://iam.googleapis.com/" + pool + "/attribute.aws_role/" + role,
		"principalSet://iam.googleapis.com/" + pool + "/*",
	}
	e.Fields["attribute.aws_role"] = role
	g.mu.Lock()
	g.n++
	tok := fmt.Sprintf("fake-federated-%d", g.n)
	if g.federated == nil {
		g.federated = map[string]fedToken{}
	}
	g.federated[tok] = fedToken{principals: principals, expires: g.now().Add(time.Hour)}
	g.mu.Unlock()
	e.Status, e.Fields["expires_in"] = 200, "3600"
	g.record(e)
	writeJSON(w, 200, map[string]any{"access_token": tok, "issued_token_type": tokenTypeAccess, "token_type": "Bearer", "expires_in": 3600})
}

var assumedRoleRE = regexp.MustCompile(`^arn:aws[a-z-]*:sts::([0-9]{12}):assumed-role/([\w+=,.@-]+)/[\w+=,.@-]+$`)

// subject decodes the subject token (a URL-encoded JSON of the signed
// request: url, method, headers) and checks it is a GetCallerIdentity
// request to a regional AWS STS endpoint, signed by a known key, that
// names the audience in x-goog-cloud-target-resource. It returns the
// caller's ARN, as AWS would.
func (g *Google) subject(token, audience string) (arn, region string, err error) {
	raw, err := url.QueryUnescape(token)
	if err != nil {
		return "", "", fmt.Errorf("not URL-encoded: %v", err)
	}
	var req struct {
		URL     string `json:"url"`
		Method  string `json:"method"`
		Headers []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"headers"`
	}
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		return "", "", fmt.Errorf("not the JSON of a signed request: %v", err)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return "", "", err
	}
	m := stsHostRE.FindStringSubmatch(u.Host)
	if m == nil || u.Scheme != "https" {
		return "", "", fmt.Errorf("url %s is not a regional AWS STS endpoint", req.URL)
	}
	region = m[1]
	if q := u.Query(); q.Get("Action") != "GetCallerIdentity" || q.Get("Version") != "2011-06-15" || req.Method != http.MethodPost {
		return "", region, fmt.Errorf("%s %s is not sts:GetCallerIdentity", req.Method, req.URL)
	}
	h := http.Header{}
	for _, kv := range req.Headers {
		h.Add(kv.Key, kv.Value)
	}
	if got := h.Get("x-goog-cloud-target-resource"); got != audience {
		return "", region, fmt.Errorf("x-goog-cloud-target-resource %q is not the audience %q", got, audience)
	}
	s, err := verifySigV4(req.Method, u, h, nil, g.AWSKeys, g.now())
	if err != nil {
		return "", region, err
	}
	if !slices.Contains(s.SignedHeaders, "x-goog-cloud-target-resource") {
		return "", region, fmt.Errorf("x-goog-cloud-target-resource is not signed")
	}
	if s.Region != region || s.Service != "sts" {
		return "", region, fmt.Errorf("signed for %s/%s, sent to %s", s.Region, s.Service, u.Host)
	}
	return s.Key.ARN, region, nil
}

var generateRE = regexp.MustCompile(`^projects/-/serviceAccounts/([^/:]+):generateAccessToken$`)

// generateAccessToken impersonates a service account for the bearer of a
// federated token bound roles/iam.workloadIdentityUser on it.
func (g *Google) generateAccessToken(w http.ResponseWriter, r *http.Request) {
	e := Exchange{Endpoint: "iamcredentials.googleapis.com generateAccessToken", Fields: map[string]string{}}
	m := generateRE.FindStringSubmatch(strings.TrimPrefix(r.URL.Path, GoogleIAMPath))
	if m == nil {
		g.apiError(w, e, 404, "NOT_FOUND", "unknown method "+r.URL.Path)
		return
	}
	sa, _ := url.PathUnescape(m[1])
	e.Fields["service_account"] = sa
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	fed, ok := g.federated[bearer]
	g.mu.Unlock()
	if !ok || !g.now().Before(fed.expires) {
		g.apiError(w, e, 401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	e.Fields["bearer"] = "federated token of " + fed.principals[0]
	var body struct {
		Scope     []string `json:"scope"`
		Lifetime  string   `json:"lifetime"`
		Delegates []string `json:"delegates"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		g.apiError(w, e, 400, "INVALID_ARGUMENT", err.Error())
		return
	}
	e.Fields["scope"] = strings.Join(body.Scope, " ")
	e.Fields["lifetime"] = body.Lifetime
	life := time.Hour
	if body.Lifetime != "" {
		secs, err := strconv.Atoi(strings.TrimSuffix(body.Lifetime, "s"))
		if err != nil || !strings.HasSuffix(body.Lifetime, "s") || secs <= 0 || secs > 3600 {
			g.apiError(w, e, 400, "INVALID_ARGUMENT", "The lifetime must be between 1s and 3600s (without an organization policy exception): "+body.Lifetime)
			return
		}
		life = time.Duration(secs) * time.Second
	}
	if len(body.Scope) == 0 {
		g.apiError(w, e, 400, "INVALID_ARGUMENT", "Scope required.")
		return
	}
	bound := false
	for _, p := range fed.principals {
		bound = bound || slices.Contains(g.Bindings[sa], p)
	}
	if !bound {
		g.apiError(w, e, 403, "PERMISSION_DENIED", "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).")
		return
	}
	g.mu.Lock()
	g.n++
	tok := fmt.Sprintf("fake-gcs-access-%d", g.n)
	g.mu.Unlock()
	exp := g.now().Add(life).UTC()
	g.issue(tok, sa)
	e.Status, e.Fields["expire_time"] = 200, exp.Format(time.RFC3339)
	g.record(e)
	writeJSON(w, 200, map[string]string{"accessToken": tok, "expireTime": exp.Format(time.RFC3339)})
}

// GoogleTokenAudience is the aud a service account key's JWT must carry.
const GoogleTokenAudience = "https://oauth2.googleapis.com/token"

// jwtBearer exchanges a service account key's self-signed JWT.
func (g *Google) jwtBearer(w http.ResponseWriter, r *http.Request) {
	e := Exchange{Endpoint: "oauth2.googleapis.com/token", Fields: map[string]string{}}
	if err := r.ParseForm(); err != nil {
		g.oauthError(w, e, 400, "invalid_request", err.Error())
		return
	}
	e.Fields["grant_type"] = r.PostForm.Get("grant_type")
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		g.oauthError(w, e, 400, "unsupported_grant_type", "Invalid grant_type")
		return
	}
	var claims struct {
		jwt.RegisteredClaims
		Scope string `json:"scope"`
	}
	_, err := jwt.ParseWithClaims(r.PostForm.Get("assertion"), &claims, func(t *jwt.Token) (any, error) {
		iss, _ := t.Claims.GetIssuer()
		k, ok := g.ServiceAccountKeys[iss]
		if !ok {
			return nil, fmt.Errorf("no key of %q", iss)
		}
		return k, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(GoogleTokenAudience), jwt.WithTimeFunc(g.now), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	e.Fields["iss"], e.Fields["scope"] = claims.Issuer, claims.Scope
	if err != nil {
		g.oauthError(w, e, 400, "invalid_grant", "Invalid JWT: "+err.Error())
		return
	}
	if claims.ExpiresAt.Sub(claims.IssuedAt.Time) > time.Hour {
		g.oauthError(w, e, 400, "invalid_grant", "Invalid JWT: expiration more than an hour after issue")
		return
	}
	if claims.Scope == "" {
		g.oauthError(w, e, 400, "invalid_scope", "Empty or missing scope not allowed.")
		return
	}
	g.mu.Lock()
	g.n++
	tok := fmt.Sprintf("fake-sa-key-access-%d", g.n)
	g.mu.Unlock()
	g.issue(tok, claims.Issuer)
	e.Status, e.Fields["expires_in"] = 200, "3599"
	g.record(e)
	writeJSON(w, 200, map[string]any{"access_token": tok, "expires_in": 3599, "token_type": "Bearer"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
