package ledger

import "context"

// Who asked for a manual action (a re-export, a requeue, a re-run) travels
// with the request's context, as a caller's identity does: the transitions
// that serve a manual action (ClaimManual, Requeue and the re-run they may
// request) store it on the row as requested_by, every claim of the row
// carries it (Claim.RequestedBy), and the attempt's history records it.
// A scheduled materialization or a restatement has no requester and clears
// it.

type requestedByKey struct{}

// WithRequestedBy returns ctx carrying who asks for the manual actions made
// with it; "" carries nobody.
func WithRequestedBy(ctx context.Context, by string) context.Context {
	return context.WithValue(ctx, requestedByKey{}, by)
}

// requestedBy is who ctx says asks, "" when nobody is named.
func requestedBy(ctx context.Context) string {
	by, _ := ctx.Value(requestedByKey{}).(string)
	return by
}
