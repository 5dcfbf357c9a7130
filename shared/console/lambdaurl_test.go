package console

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func urlEvent(method, path, query, body string, b64 bool) events.LambdaFunctionURLRequest {
	return events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, RawQueryString: query, Body: body, IsBase64Encoded: b64,
		Cookies: []string{"a=1", "daybook_csrf=xyz"},
		Headers: map[string]string{"host": "abc.lambda-url.eu-west-1.on.aws", "content-type": "application/x-www-form-urlencoded", "origin": "https://abc.lambda-url.eu-west-1.on.aws"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			DomainName: "abc.lambda-url.eu-west-1.on.aws",
			HTTP:       events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.9"},
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
				UserARN: "arn:aws:sts::123456789012:assumed-role/ops/alice"}},
		},
	}
}

func TestFunctionURLHandlerRequest(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var body string
	h := FunctionURLHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	}))
	for _, tt := range []struct {
		name string
		ev   events.LambdaFunctionURLRequest
		body string
	}{
		{"plain body", urlEvent("POST", "/actions/reexport", "x=1&y=2", "account=a&day=2026-11-20", false), "account=a&day=2026-11-20"},
		{"base64 body", urlEvent("POST", "/actions/reexport", "x=1&y=2", base64.StdEncoding.EncodeToString([]byte("account=a")), true), "account=a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if got.Method != "POST" || got.URL.Path != "/actions/reexport" || got.URL.Query().Get("y") != "2" || got.Host != "abc.lambda-url.eu-west-1.on.aws" {
				t.Errorf("request %s %s host %s", got.Method, got.URL, got.Host)
			}
			if body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
			if c, err := got.Cookie("daybook_csrf"); err != nil || c.Value != "xyz" {
				t.Errorf("cookie %v %v", c, err)
			}
			if got.Header.Get("Origin") != "https://abc.lambda-url.eu-west-1.on.aws" || got.RemoteAddr != "203.0.113.9" {
				t.Errorf("headers %v, remote %s", got.Header, got.RemoteAddr)
			}
			if who := IdentityFromContext(got); who != "arn:aws:sts::123456789012:assumed-role/ops/alice" {
				t.Errorf("identity %q", who)
			}
		})
	}
	// Without an authorizer (an AuthType NONE URL, which the template never
	// makes) there is no identity, and actions are refused.
	ev := urlEvent("GET", "/", "", "", false)
	ev.RequestContext.Authorizer = nil
	if _, err := h(context.Background(), ev); err != nil || IdentityFromContext(got) != "" {
		t.Errorf("identity %q without an authorizer (%v)", IdentityFromContext(got), err)
	}
	if res, _ := h(context.Background(), urlEvent("POST", "/", "", "%%%", true)); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a body that is not base64: status %d", res.StatusCode)
	}
}

func TestFunctionURLHandlerResponse(t *testing.T) {
	t.Parallel()
	h := FunctionURLHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			http.SetCookie(w, &http.Cookie{Name: "__Host-daybook_csrf", Value: "t", Path: "/", Secure: true})
			http.SetCookie(w, &http.Cookie{Name: "other", Value: "o"})
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "<p>hi</p>")
		case "/binary":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G'})
		}
	}))
	res, err := h(context.Background(), urlEvent("GET", "/page", "", "", false))
	if err != nil || res.StatusCode != http.StatusTeapot || res.Body != "<p>hi</p>" || res.IsBase64Encoded ||
		res.Headers["Content-Type"] != "text/html; charset=utf-8" || len(res.Cookies) != 2 || !strings.HasPrefix(res.Cookies[0], "__Host-daybook_csrf=t") {
		t.Errorf("page response %+v (%v)", res, err)
	}
	if _, ok := res.Headers["Set-Cookie"]; ok {
		t.Error("Set-Cookie left in the headers: a function URL wants cookies apart")
	}
	res, _ = h(context.Background(), urlEvent("GET", "/binary", "", "", false))
	if b, err := base64.StdEncoding.DecodeString(res.Body); err != nil || !res.IsBase64Encoded || string(b) != "\x89PNG" || res.StatusCode != http.StatusOK {
		t.Errorf("binary response %+v", res)
	}
}

// TestConsoleOverAFunctionURL: the console behind the adapter, as the
// console Lambda serves it: a page sets the __Host- cookie, and a POST from
// that page acts as the caller's IAM principal.
func TestConsoleOverAFunctionURL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) {
		c.Secure, c.Hosts, c.Identity = true, nil, IdentityFromContext
	})
	seed(f)
	h := FunctionURLHandler(f.srv)
	page, err := h(context.Background(), urlEvent("GET", "/actions/reexport", "account="+troubled+"&dataset=events&day=2026-11-24", "", false))
	if err != nil || page.StatusCode != http.StatusOK || len(page.Cookies) != 1 {
		t.Fatalf("confirmation page %d, cookies %v (%v)", page.StatusCode, page.Cookies, err)
	}
	token := hiddenToken(page.Body)
	cookie := strings.SplitN(page.Cookies[0], ";", 2)[0]
	ev := urlEvent("POST", "/actions/reexport", "", "account="+troubled+"&dataset=events&day=2026-11-24&csrf="+token, false)
	ev.Cookies = []string{cookie}
	res, err := h(context.Background(), ev)
	if err != nil || res.StatusCode != http.StatusOK || len(f.queue.sent()) != 1 || !strings.Contains(f.queue.sent()[0], `"requested_by":"arn:aws:sts::123456789012:assumed-role/ops/alice"`) {
		t.Errorf("post: %d, sent %v (%v)\n%s", res.StatusCode, f.queue.sent(), err, res.Body)
	}
}
