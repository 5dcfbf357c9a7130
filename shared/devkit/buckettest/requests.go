package buckettest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// Requests is an HTTP transport that records every request it sends: a
// backend whose emulator does not keep an attribute (fake-gcs-server's
// kmsKeyName, Azurite's encryption scope) shows that the request carried
// it.
type Requests struct {
	Base http.RoundTripper // nil: http.DefaultTransport
	mu   sync.Mutex
	seen []Request
}

// Request is one recorded request.
type Request struct {
	Method string
	URL    *url.URL
	Header http.Header
}

func (r *Requests) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, Request{Method: req.Method, URL: req.URL, Header: req.Header.Clone()})
	r.mu.Unlock()
	base := r.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(req)
}

// Do is RoundTrip, for a client that wants an HTTP client (the Azure SDK).
func (r *Requests) Do(req *http.Request) (*http.Response, error) { return r.RoundTrip(req) }

// Matching returns the recorded requests match accepts.
func (r *Requests) Matching(match func(Request) bool) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, q := range r.seen {
		if match(q) {
			out = append(out, q)
		}
	}
	return out
}

// RecordingProxy is an HTTP server on loopback forwarding every request to
// target (a store emulator's URL) and recording it, for a test that must
// see what a client it cannot reach into (the exporter's) sent. It closes
// when the test ends.
func RecordingProxy(t testing.TB, target string) (*httptest.Server, *Requests) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Requests{}
	p := httputil.NewSingleHostReverseProxy(u)
	p.Transport = rec
	s := httptest.NewServer(p)
	t.Cleanup(s.Close)
	return s, rec
}
