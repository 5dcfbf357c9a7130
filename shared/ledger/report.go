package ledger

import (
	"context"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Reporter is where the ledger reports what fails after a recorded
// transition: lowering the account's wake time (wake.go) and writing the
// attempt's history item (history.go). The transition stands and returns
// nil, so the failure is logged as a warning and counted (WakeFailures,
// HistoryWriteFailures; the template alarms on both) instead.
type Reporter struct {
	// Log gets the warnings; nil is slog.Default().
	Log *slog.Logger
	// Metrics counts them; nil counts nothing.
	Metrics *metrics.Emitter
}

func (r Reporter) log() *slog.Logger {
	if r.Log == nil {
		return slog.Default()
	}
	return r.Log
}

// WakeFailed reports a transition recorded whose account's wake time was
// not lowered: a sweep finds the row at the account's next wake (its next
// day close at the latest).
func (r Reporter) WakeFailed(ctx context.Context, accountID string, err error) {
	r.log().WarnContext(ctx, "transition recorded, but the account's wake time was not lowered; a sweep finds it at the account's next wake",
		"account", accountID, "cause", err.Error())
	_ = r.Metrics.Emit(map[string]any{"account": accountID}, metrics.Metric{Name: "WakeFailures", Unit: metrics.Count, Value: 1})
}

// HistoryFailed reports an attempt that ended whose history item was not
// written: the partition row stays the truth.
func (r Reporter) HistoryFailed(ctx context.Context, key partition.Key, err error) {
	r.log().WarnContext(ctx, "attempt history not written; the transition stands",
		"account", key.AccountID, "partition", key.String(), "cause", err.Error())
	_ = r.Metrics.Emit(map[string]any{"account": key.AccountID}, metrics.Metric{Name: "HistoryWriteFailures", Unit: metrics.Count, Value: 1})
}
