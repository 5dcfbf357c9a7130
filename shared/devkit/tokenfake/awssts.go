package tokenfake

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AWSSTS is AWS STS's GetWebIdentityToken (outbound identity federation),
// which moto_server does not implement, and the account issuer's OpenID
// discovery documents (/.well-known/openid-configuration and
// /.well-known/jwks.json) that a relying party reads the signing keys from.
// A request is checked as AWS checks it: a SigV4 signature by a known key
// (service sts), the parameters' ranges, outbound federation enabled, and
// the caller's IAM permission as the template grants it (audiences and
// most seconds, from the sts:IdentityTokenAudience and sts:DurationSeconds
// conditions).
//
//	https://docs.aws.amazon.com/STS/latest/APIReference/API_GetWebIdentityToken.html
//	https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_outbound_token_claims.html
type AWSSTS struct {
	// Issuer is the account's issuer URL (the fake's own base URL: the
	// discovery documents are served under it).
	Issuer string
	// Keys are the AWS keys it knows, by access key id.
	Keys map[string]AWSKey
	// Disabled: outbound identity federation is not enabled in the account.
	Disabled bool
	// AllowedAudiences and MaxSeconds are what the callers' IAM policy
	// allows (empty: nothing).
	AllowedAudiences []string
	MaxSeconds       int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Others, when set, serves every other STS request (moto's STS, for
	// a function whose STS client also assumes roles); nil refuses them.
	Others http.Handler

	once sync.Once
	key  *rsa.PrivateKey
	mu   sync.Mutex
	n    int
	log  []Exchange
}

// KeyID is the kid of the fake's signing key.
const KeyID = "daybook-fake-sts-1"

func (s *AWSSTS) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *AWSSTS) signingKey() *rsa.PrivateKey {
	s.once.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		s.key = k
	})
	return s.key
}

// Exchanges returns the requests answered so far, in order.
func (s *AWSSTS) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *AWSSTS) record(e Exchange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, e)
}

// ServeHTTP serves the STS query API (POST /) and the discovery documents.
func (s *AWSSTS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/.well-known/openid-configuration":
		writeJSON(w, 200, map[string]any{
			"issuer": s.Issuer, "jwks_uri": s.Issuer + "/.well-known/jwks.json",
			"id_token_signing_alg_values_supported": []string{"RS256"}, "response_types_supported": []string{"id_token"},
			"subject_types_supported": []string{"public"},
		})
	case r.Method == http.MethodGet && r.URL.Path == "/.well-known/jwks.json":
		pub := s.signingKey().PublicKey
		writeJSON(w, 200, map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KeyID,
			"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
		}}})
	case r.Method == http.MethodPost && r.URL.Path == "/":
		s.query(w, r)
	default:
		http.NotFound(w, r)
	}
}

type stsError struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Type    string   `xml:"Error>Type"`
	Code    string   `xml:"Error>Code"`
	Message string   `xml:"Error>Message"`
}

func (s *AWSSTS) fail(w http.ResponseWriter, e Exchange, status int, code, msg string) {
	e.Status, e.Problem = status, code+": "+msg
	s.record(e)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_ = xml.NewEncoder(w).Encode(stsError{Type: "Sender", Code: code, Message: msg})
}

func (s *AWSSTS) query(w http.ResponseWriter, r *http.Request) {
	e := Exchange{Endpoint: "sts GetWebIdentityToken", Fields: map[string]string{}}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		s.fail(w, e, 400, "InvalidRequest", err.Error())
		return
	}
	f, err := url.ParseQuery(string(body))
	if err != nil {
		s.fail(w, e, 400, "MalformedQueryString", err.Error())
		return
	}
	if f.Get("Action") != "GetWebIdentityToken" && s.Others != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.Others.ServeHTTP(w, r)
		return
	}
	if f.Get("Action") != "GetWebIdentityToken" || f.Get("Version") != "2011-06-15" {
		s.fail(w, e, 400, "InvalidAction", "this fake serves GetWebIdentityToken only, not "+f.Get("Action"))
		return
	}
	u := *r.URL
	u.Host = r.Host
	h := r.Header.Clone()
	if h.Get("Content-Length") == "" && r.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	sig, err := verifySigV4(r.Method, &u, h, body, s.Keys, s.now())
	if err != nil {
		s.fail(w, e, 403, "SignatureDoesNotMatch", err.Error())
		return
	}
	e.Fields["caller"] = sig.Key.ARN
	e.Fields["region"] = sig.Region
	if sig.Service != "sts" {
		s.fail(w, e, 403, "SignatureDoesNotMatch", "signed for service "+sig.Service)
		return
	}
	var auds []string
	for i := 1; f.Has("Audience.member." + strconv.Itoa(i)); i++ {
		auds = append(auds, f.Get("Audience.member."+strconv.Itoa(i)))
	}
	e.Fields["audience"] = strings.Join(auds, " ")
	e.Fields["signing_algorithm"] = f.Get("SigningAlgorithm")
	secs := 300
	if v := f.Get("DurationSeconds"); v != "" {
		secs, _ = strconv.Atoi(v)
	}
	e.Fields["duration_seconds"] = strconv.Itoa(secs)
	switch {
	case len(auds) < 1 || len(auds) > 10:
		s.fail(w, e, 400, "ValidationError", fmt.Sprintf("%d audiences: want 1 to 10", len(auds)))
		return
	case f.Get("SigningAlgorithm") != "RS256" && f.Get("SigningAlgorithm") != "ES384":
		s.fail(w, e, 400, "ValidationError", "SigningAlgorithm must be RS256 or ES384")
		return
	case f.Get("SigningAlgorithm") == "ES384":
		s.fail(w, e, 400, "ValidationError", "this fake signs with RS256 only")
		return
	case secs < 60 || secs > 3600:
		s.fail(w, e, 400, "ValidationError", "DurationSeconds must be between 60 and 3600")
		return
	}
	m := assumedRoleRE.FindStringSubmatch(sig.Key.ARN)
	if m == nil {
		s.fail(w, e, 403, "AccessDenied", sig.Key.ARN+" is not a role session")
		return
	}
	for _, a := range auds {
		if !slices.Contains(s.AllowedAudiences, a) || secs > s.MaxSeconds {
			s.fail(w, e, 403, "AccessDenied", fmt.Sprintf("User: %s is not authorized to perform: sts:GetWebIdentityToken (audience %s, %d seconds)", sig.Key.ARN, a, secs))
			return
		}
	}
	if s.Disabled {
		s.fail(w, e, 403, "OutboundWebIdentityFederationDisabledException", "Outbound identity federation is not enabled for this account")
		return
	}
	now := s.now().Truncate(time.Second)
	exp := now.Add(time.Duration(secs) * time.Second)
	s.mu.Lock()
	s.n++
	jti := fmt.Sprintf("fake-jti-%d", s.n)
	s.mu.Unlock()
	var aud any = auds
	if len(auds) == 1 {
		aud = auds[0]
	}
	sub := "arn:aws:iam::" + m[1] + ":role/" + m[2]
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": s.Issuer, "aud": aud, "sub": sub, "iat": now.Unix(), "exp": exp.Unix(), "jti": jti,
		"https://sts.amazonaws.com/": map[string]any{"aws_account": m[1], "source_region": sig.Region},
	})
	tok.Header["kid"] = KeyID
	signed, err := tok.SignedString(s.signingKey())
	if err != nil {
		s.fail(w, e, 500, "InternalFailure", err.Error())
		return
	}
	e.Status, e.Fields["sub"], e.Fields["iss"], e.Fields["exp"] = 200, sub, s.Issuer, exp.UTC().Format(time.RFC3339)
	s.record(e)
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<GetWebIdentityTokenResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <GetWebIdentityTokenResult>
    <WebIdentityToken>%s</WebIdentityToken>
    <Expiration>%s</Expiration>
  </GetWebIdentityTokenResult>
  <ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>
</GetWebIdentityTokenResponse>`, signed, exp.UTC().Format(time.RFC3339), jti)
}
