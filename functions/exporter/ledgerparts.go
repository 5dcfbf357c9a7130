package main

import "github.com/daybook-dev/daybook/shared/ledger"

// The ledger's aggregates each of the exporter's ledger interfaces uses.
type (
	// serviceLedger has LedgerAPI and SliceLedger: accounts, partition
	// rows, slices and issued tokens.
	serviceLedger struct {
		ledger.Accounts
		ledger.Partitions
		ledger.Slices
		ledger.Tokens
		// of is the ledger they are parts of.
		of *ledger.Ledger
	}
	// schemaLedger has SchemaLedger: delivered schemas, and partition rows
	// (whether a dataset was ever committed).
	schemaLedger struct {
		ledger.Schemas
		ledger.Partitions
	}
	// lifecycleLedger has LifecycleLedger: restatement checks, reseeds and
	// partition rows (requeues).
	lifecycleLedger struct {
		ledger.Restates
		ledger.Seeds
		ledger.Partitions
	}
)

func serviceLedgerOf(l *ledger.Ledger) serviceLedger {
	return serviceLedger{l.Accounts(), l.Partitions(), l.Slices(), l.Tokens(), l}
}

func schemaLedgerOf(l *ledger.Ledger) schemaLedger { return schemaLedger{l.Schemas(), l.Partitions()} }

func lifecycleLedgerOf(l *ledger.Ledger) lifecycleLedger {
	return lifecycleLedger{l.Restates(), l.Seeds(), l.Partitions()}
}
