// Package tokenfake is test support: local fakes of the token endpoints a
// GCS or Azure destination's credentials come from, each checking what the
// real one checks and recording what it was sent.
//
//   - Google: the Security Token Service's token exchange (/v1/token), IAM
//     Credentials' generateAccessToken, and the OAuth 2.0 token endpoint a
//     service account key's JWT is exchanged at.
//   - AWSSTS: AWS STS GetWebIdentityToken (moto does not implement it),
//     with the issuer's OpenID configuration and keys.
//   - Entra: Microsoft Entra ID's tenant discovery and token endpoint, for
//     a client assertion checked against an application's federated
//     identity credentials.
//
// Only token endpoints are faked (the brief allows small fakes for them);
// the stores themselves are real emulators.
package tokenfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// AWSKey is an AWS access key a fake knows: its secret (to check
// signatures), session token (checked when set), and whose it is.
type AWSKey struct {
	Secret       string
	SessionToken string
	// ARN is what GetCallerIdentity answers for the key: for a role
	// session arn:aws:sts::<account>:assumed-role/<role>/<session>.
	ARN string
}

// sigV4 is a verified AWS Signature Version 4.
type sigV4 struct {
	AccessKeyID, Region, Service string
	Key                          AWSKey
	SignedHeaders                []string
}

// verifySigV4 checks an AWS Signature Version 4 as AWS does: the
// Authorization header's credential scope (date, region, service), the
// listed headers (host and x-amz-date among them), the signature over the
// canonical request with the key's secret, the session token, and the
// request time within 15 minutes of now.
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html
func verifySigV4(method string, u *url.URL, h http.Header, payload []byte, keys map[string]AWSKey, now time.Time) (sigV4, error) {
	auth := h.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return sigV4{}, fmt.Errorf("authorization %q: not AWS4-HMAC-SHA256", auth)
	}
	parts := map[string]string{}
	for _, p := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		parts[k] = v
	}
	scope := strings.Split(parts["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return sigV4{}, fmt.Errorf("credential %q: want AKID/date/region/service/aws4_request", parts["Credential"])
	}
	s := sigV4{AccessKeyID: scope[0], Region: scope[2], Service: scope[3], SignedHeaders: strings.Split(parts["SignedHeaders"], ";")}
	key, ok := keys[s.AccessKeyID]
	if !ok {
		return s, fmt.Errorf("InvalidClientTokenId: access key %s is not known", s.AccessKeyID)
	}
	s.Key = key
	amzDate := h.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return s, fmt.Errorf("x-amz-date %q: %v", amzDate, err)
	}
	if d := now.Sub(at); d > 15*time.Minute || d < -15*time.Minute {
		return s, fmt.Errorf("SignatureDoesNotMatch: request time %s is more than 15 minutes from %s", at, now.UTC())
	}
	if scope[1] != amzDate[:8] {
		return s, fmt.Errorf("credential scope date %s is not the request's %s", scope[1], amzDate[:8])
	}
	for _, need := range []string{"host", "x-amz-date"} {
		if !slices.Contains(s.SignedHeaders, need) {
			return s, fmt.Errorf("signed headers %v lack %s", s.SignedHeaders, need)
		}
	}
	if key.SessionToken != "" && h.Get("X-Amz-Security-Token") != key.SessionToken {
		return s, fmt.Errorf("InvalidClientTokenId: the session token of %s is missing or wrong", s.AccessKeyID)
	}
	var canon strings.Builder
	canon.WriteString(method + "\n")
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	canon.WriteString(path + "\n")
	canon.WriteString(canonicalQuery(u.Query()) + "\n")
	for _, name := range s.SignedHeaders {
		v := h.Values(name)
		if name == "host" && len(v) == 0 {
			v = []string{u.Host}
		}
		if len(v) == 0 {
			return s, fmt.Errorf("signed header %s is missing", name)
		}
		for i := range v {
			v[i] = strings.Join(strings.Fields(v[i]), " ")
		}
		canon.WriteString(name + ":" + strings.Join(v, ",") + "\n")
	}
	canon.WriteString("\n" + parts["SignedHeaders"] + "\n")
	sum := sha256.Sum256(payload)
	canon.WriteString(hex.EncodeToString(sum[:]))
	creq := sha256.Sum256([]byte(canon.String()))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + strings.Join(scope[1:], "/") + "\n" + hex.EncodeToString(creq[:])
	k := hmacSHA256([]byte("AWS4"+key.Secret), scope[1])
	for _, p := range scope[2:] {
		k = hmacSHA256(k, p)
	}
	want := hex.EncodeToString(hmacSHA256(k, toSign))
	if !hmac.Equal([]byte(want), []byte(parts["Signature"])) {
		return s, fmt.Errorf("SignatureDoesNotMatch: the request signature we calculated does not match the signature you provided")
	}
	return s, nil
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func canonicalQuery(q url.Values) string {
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, awsEscape(k)+"="+awsEscape(v))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// awsEscape is SigV4's URI encoding: every byte except A-Z a-z 0-9 - _ . ~
// percent-encoded in upper case.
func awsEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
