package mototest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// LoseFirstAnswer is a proxy in front of the service at target (moto's
// base URL) that lets the first call of a JSON protocol operation (op, as
// the X-Amz-Target header ends: "CreateTable", "UpdateItem") reach the
// service, then closes the connection instead of answering: the call took
// effect and its answer is lost, and the SDK sends the request again, as
// it does when a network drops an answer. With bodyHas, only a call whose
// request body holds every one of those strings is cut (an item's key, an
// attribute's name). Every other call goes through. It returns the proxy's
// URL and how many answers it cut (at most one); the proxy stops with the
// test.
func LoseFirstAnswer(t testing.TB, target, op string, bodyHas ...string) (proxyURL string, cut *atomic.Int32) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	cut = &atomic.Int32{}
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		match := strings.HasSuffix(r.Header.Get("X-Amz-Target"), "."+op)
		for _, s := range bodyHas {
			match = match && bytes.Contains(body, []byte(s))
		}
		if !match || !cut.CompareAndSwap(0, 1) {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			t.Errorf("the first %s through the proxy: %d %s", op, rec.Code, rec.Body)
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(p.Close)
	return p.URL, cut
}
