package main

import "github.com/daybook-dev/daybook/shared/ledger"

// functionLedger is the ledger's aggregates the sweeper uses: the
// schedule (wake times, watermarks, materialized days, the claim budget,
// the stopped level), partition rows (due work, claims), accounts,
// restatement checks, the outbox and the fleet summaries. It has every
// ledger interface of this package.
type functionLedger struct {
	ledger.Schedule
	ledger.Partitions
	ledger.Accounts
	ledger.Restates
	ledger.Outbox
	ledger.Fleet
	cfg ledger.Config
}

// Config is the ledger's effective configuration.
func (f functionLedger) Config() ledger.Config { return f.cfg }

func ledgerOf(l *ledger.Ledger) functionLedger {
	return functionLedger{l.Schedule(), l.Partitions(), l.Accounts(), l.Restates(), l.Outbox(), l.Fleet(), l.Config()}
}
