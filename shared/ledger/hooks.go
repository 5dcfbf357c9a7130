package ledger

import (
	"context"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// ReportFailures points the WakeFailed and HistoryFailed hooks at a
// function's log and metrics: what fails after a recorded
// transition (lowering the account's wake time, writing the attempt's
// history item) is logged and counted (WakeFailures, HistoryWriteFailures);
// the transition stands and returns nil.
func (cfg *Config) ReportFailures(m *metrics.Emitter, log *slog.Logger) {
	cfg.WakeFailed = func(ctx context.Context, accountID string, err error) {
		log.WarnContext(ctx, "transition recorded, but the account's wake time was not lowered; a sweep finds it at the account's next wake",
			"account", accountID, "cause", err.Error())
		_ = m.Emit(map[string]any{"account": accountID}, metrics.Metric{Name: "WakeFailures", Unit: metrics.Count, Value: 1})
	}
	cfg.HistoryFailed = func(ctx context.Context, key partition.Key, err error) {
		log.WarnContext(ctx, "attempt history not written; the transition stands",
			"account", key.AccountID, "partition", key.String(), "cause", err.Error())
		_ = m.Emit(map[string]any{"account": key.AccountID}, metrics.Metric{Name: "HistoryWriteFailures", Unit: metrics.Count, Value: 1})
	}
}
