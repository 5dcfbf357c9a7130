package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// FunctionURLHandler serves h to a Lambda function URL (payload format 2.0,
// buffered invoke mode): the event becomes an *http.Request whose context
// carries the caller's IAM principal (WithIdentity; the URL's AWS_IAM auth
// has checked it), and what h writes becomes the response.
func FunctionURLHandler(h http.Handler) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	return func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		r, err := requestOf(ctx, ev)
		if err != nil {
			return events.LambdaFunctionURLResponse{StatusCode: http.StatusBadRequest, Body: "daybook console: " + err.Error() + "\n",
				Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}}, nil
		}
		w := &bufferedResponse{header: http.Header{}}
		h.ServeHTTP(w, r)
		return w.response(), nil
	}
}

// requestOf turns a function URL event into a request.
func requestOf(ctx context.Context, ev events.LambdaFunctionURLRequest) (*http.Request, error) {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("the request body is not base64: %w", err)
		}
		body = b
	}
	host := ev.RequestContext.DomainName
	for k, v := range ev.Headers {
		if strings.EqualFold(k, "host") {
			host = v
		}
	}
	u := &url.URL{Scheme: "https", Host: host, Path: ev.RawPath, RawQuery: ev.RawQueryString}
	if u.Path == "" {
		u.Path = "/"
	}
	if ev.RequestContext.Authorizer != nil && ev.RequestContext.Authorizer.IAM != nil {
		ctx = WithIdentity(ctx, ev.RequestContext.Authorizer.IAM.UserARN)
	}
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	r, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.RequestURI = u.RequestURI()
	r.Host = host
	r.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	for k, v := range ev.Headers {
		// A function URL joins a repeated header's values with commas.
		r.Header.Set(k, v)
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	return r, nil
}

// bufferedResponse is an http.ResponseWriter that keeps what is written.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

// textual reports whether a content type is text the response can carry
// as it is; anything else is sent base64-encoded.
func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return contentType == ""
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || mt == "application/javascript" || mt == "image/svg+xml"
}

func (b *bufferedResponse) response() events.LambdaFunctionURLResponse {
	res := events.LambdaFunctionURLResponse{StatusCode: b.code, Headers: map[string]string{}}
	if res.StatusCode == 0 {
		res.StatusCode = http.StatusOK
	}
	for k, vs := range b.header {
		if k == "Set-Cookie" {
			res.Cookies = append(res.Cookies, vs...)
			continue
		}
		res.Headers[k] = strings.Join(vs, ", ")
	}
	if ct := b.header.Get("Content-Type"); b.body.Len() > 0 && ct == "" {
		res.Headers["Content-Type"] = http.DetectContentType(b.body.Bytes())
	}
	if textual(res.Headers["Content-Type"]) {
		res.Body = b.body.String()
	} else {
		res.Body, res.IsBase64Encoded = base64.StdEncoding.EncodeToString(b.body.Bytes()), true
	}
	return res
}
