package console

// Cross-site request protection. Every state change is a POST from a form
// the console drew. A POST is accepted only when
//
//   - the browser says it comes from this origin: Sec-Fetch-Site is
//     same-origin, or Origin is this console's own origin (scheme and
//     host); a POST with neither header is refused (every current browser
//     sends Origin on a POST);
//   - it carries the session's token twice: in the cookie and in the form's
//     hidden field, equal (double submit). The cookie is random per browser
//     session, HttpOnly and SameSite=Strict, so another site can neither read
//     it nor have it sent; over HTTPS it is Secure with the __Host- prefix,
//     so no other host (a sibling subdomain) can set it either.
//
// The host check (Config.Hosts) keeps a page that rebinds its own name to
// a local console's address from reading pages, and with them the token.

import (
	"crypto/subtle"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
)

const (
	csrfCookie       = "daybook_csrf"
	csrfSecureCookie = "__Host-daybook_csrf"
	csrfField        = "csrf"
	csrfBytes        = 32
)

func (s *Server) csrfCookieName() string {
	if s.cfg.Secure {
		return csrfSecureCookie
	}
	return csrfCookie
}

// validToken: the form a token takes (base64url of csrfBytes random bytes).
func validToken(t string) bool {
	b, err := base64.RawURLEncoding.DecodeString(t)
	return err == nil && len(b) == csrfBytes
}

// csrfToken returns the session's token, setting a new cookie when the
// request has none (or a malformed one).
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(s.csrfCookieName()); err == nil && validToken(c.Value) {
		return c.Value
	}
	b := make([]byte, csrfBytes)
	if _, err := io.ReadFull(s.cfg.Rand, b); err != nil {
		s.cfg.Log.Error("console: no randomness for a session token", "error", err.Error())
		return ""
	}
	t := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: s.csrfCookieName(), Value: t, Path: "/", HttpOnly: true, Secure: s.cfg.Secure, SameSite: http.SameSiteStrictMode})
	return t
}

// origin is the console's own origin as a browser names it.
func (s *Server) origin(r *http.Request) string {
	scheme := "http"
	if s.cfg.Secure {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// checkPost says why a POST is refused as a cross-site request, or "".
// It reads the form (r.PostForm).
func (s *Server) checkPost(r *http.Request) string {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	switch {
	case site != "" && site != "same-origin":
		return "the request came from another site (Sec-Fetch-Site: " + site + ")"
	case origin != "" && origin != s.origin(r):
		if u, err := url.Parse(origin); err == nil && origin != "null" {
			return "the request came from another origin (" + u.Scheme + "://" + u.Host + ")"
		}
		return "the request came from another origin (Origin: " + origin + ")"
	case site == "" && origin == "":
		return "the request says neither where it came from (Origin) nor from which site (Sec-Fetch-Site)"
	}
	c, err := r.Cookie(s.csrfCookieName())
	if err != nil || !validToken(c.Value) {
		return "the session token cookie is missing; it is set when a console page loads"
	}
	if err := r.ParseForm(); err != nil {
		return "the form could not be read: " + err.Error()
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get(csrfField)), []byte(c.Value)) != 1 {
		return "the form's session token does not match the cookie (the form is from an earlier session)"
	}
	return ""
}
