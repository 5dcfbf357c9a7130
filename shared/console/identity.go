package console

import (
	"context"
	"net/http"
)

type identityKey struct{}

// WithIdentity returns ctx carrying who sends the request (the IAM
// principal of a function URL request).
func WithIdentity(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, identityKey{}, who)
}

// IdentityFromContext is the identity WithIdentity put in the request's
// context, or "": a Config.Identity for a deployed console.
func IdentityFromContext(r *http.Request) string {
	who, _ := r.Context().Value(identityKey{}).(string)
	return who
}

// FixedIdentity is a Config.Identity that names who for every request: a
// local console, run by one operator with one AWS identity.
func FixedIdentity(who string) func(*http.Request) string {
	return func(*http.Request) string { return who }
}
