package ledger_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestLedgerFailuresAreLoggedAndCounted: a wake time not lowered and a
// history item not written after a recorded transition each log a warning
// naming the account and the cause, and count one in their metric.
func TestLedgerFailuresAreLoggedAndCounted(t *testing.T) {
	key := partition.Key{AccountID: "acct_hooktestaccount", Dataset: "events", Day: civil.MustParse("2026-03-01")}
	for _, tc := range []struct {
		metric string
		report func(r ledger.Reporter)
	}{
		{"WakeFailures", func(r ledger.Reporter) { r.WakeFailed(t.Context(), key.AccountID, errors.New("throttled")) }},
		{"HistoryWriteFailures", func(r ledger.Reporter) { r.HistoryFailed(t.Context(), key, errors.New("throttled")) }},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			var emf, logs bytes.Buffer
			tc.report(ledger.Reporter{Metrics: &metrics.Emitter{W: &emf, Stage: "test"}, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
			var line map[string]any
			if err := json.Unmarshal(emf.Bytes(), &line); err != nil {
				t.Fatalf("EMF line %q: %v", emf.String(), err)
			}
			if line[tc.metric] != 1.0 || line["account"] != key.AccountID {
				t.Errorf("EMF line %s, want %s = 1 for %s", emf.String(), tc.metric, key.AccountID)
			}
			if l := logs.String(); !strings.Contains(l, `"level":"WARN"`) || !strings.Contains(l, key.AccountID) || !strings.Contains(l, "throttled") {
				t.Errorf("log %s, want a warning with the account and the cause", l)
			}
		})
	}
}
