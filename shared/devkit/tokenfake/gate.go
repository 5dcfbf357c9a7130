package tokenfake

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Gate is the store's side of a bearer token, in front of an emulator that
// checks none (fake-gcs-server ignores Authorization; Azurite takes OAuth
// only over HTTPS, with tokens of its own making): every request must
// carry "Authorization: Bearer <token>" of a token the fake issued
// (Issued: Google.Issued, Entra.Issued), or it is answered 401 as the
// cloud answers it and goes no further. An admitted request is recorded
// (who the token is for), its Authorization removed, Admit given the
// request to add the emulator's own credentials (Azurite's SAS), and it is
// forwarded to the emulator.
type Gate struct {
	Issued func(token string) (string, bool)
	Admit  func(r *http.Request)

	mu   sync.Mutex
	seen []GateRequest
}

// GateRequest is one request a Gate saw.
type GateRequest struct {
	Method, Path string
	// Token is the bearer token it carried ("" for none), Who whose it is
	// ("" when the fake never issued it: the request was refused).
	Token, Who string
}

// Requests returns the requests seen so far, in order.
func (g *Gate) Requests() []GateRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.seen)
}

// Serve starts the gate on loopback in front of target (the emulator's
// URL) and returns its URL; it stops when t ends.
func (g *Gate) Serve(t testing.TB, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		who, ok := g.Issued(tok)
		g.mu.Lock()
		g.seen = append(g.seen, GateRequest{Method: r.Method, Path: r.URL.Path, Token: tok, Who: who})
		g.mu.Unlock()
		if tok == "" || !ok {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "the request's bearer token was not issued by the token fake", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		if g.Admit != nil {
			g.Admit(r)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
