package ops

import "github.com/daybook-dev/daybook/shared/ledger"

// Ledger is the part of the ledger the ops and the console use: accounts,
// partition rows, slices and fleet summaries. It has every ledger
// interface of this package.
type Ledger struct {
	ledger.Accounts
	ledger.Partitions
	ledger.Slices
	ledger.Fleet
}

// LedgerOf is l's aggregates the ops use.
func LedgerOf(l *ledger.Ledger) Ledger {
	return Ledger{l.Accounts(), l.Partitions(), l.Slices(), l.Fleet()}
}
