package ledger

// The ledger's aggregates: each is one part of the table with the methods
// that own it, over the kernel they share. A Ledger hands them out; a
// caller's narrow interface names only the aggregates it uses.

// Partitions are the partition rows: reading them, the due work of an
// account, and a run's transitions (claim, start, complete, fail, release,
// requeue, re-export requests), with the attempt history they leave.
type Partitions struct{ *kernel }

// Schedule is when an account is looked at and how much a sweep claims:
// materialized days and watermarks, wake times and the stopped level in
// the fleet index (wake.go, stopped.go, reconcile.go), the claim budget
// and export statistics (budget.go, stats.go).
type Schedule struct{ *kernel }

// Accounts are the account records, their isolation guards and their
// history of changes (accounts.go, accountwrite.go, guardmigrate.go).
type Accounts struct{ *kernel }

// Fleet is the accounts' fleet summaries and their stale marks
// (summary.go, summarypage.go).
type Fleet struct{ *kernel }

// Slices are the plans and slices of days exported in slices (slice.go,
// slicerun.go).
type Slices struct{ *kernel }

// Outbox is the partition events recorded before they are published
// (outbox.go).
type Outbox struct{ *kernel }

// Schemas are the delivered schemas (schemas.go).
type Schemas struct{ *kernel }

// Tokens are the claim tokens handed out (token.go).
type Tokens struct{ *kernel }

// Restates are the late-data checks of completed rows (restate.go).
type Restates struct{ *kernel }

// Seeds are the reseeds of datasets (reseed.go).
type Seeds struct{ *kernel }

// Partitions returns the partition rows' aggregate.
func (l *Ledger) Partitions() Partitions { return l.partitions() }

// Schedule returns the schedule's aggregate.
func (l *Ledger) Schedule() Schedule { return l.schedule() }

// Accounts returns the accounts' aggregate.
func (l *Ledger) Accounts() Accounts { return l.accounts() }

// Fleet returns the fleet summaries' aggregate.
func (l *Ledger) Fleet() Fleet { return l.fleet() }

// Slices returns the slices' aggregate.
func (l *Ledger) Slices() Slices { return l.slices() }

// Outbox returns the outbox's aggregate.
func (l *Ledger) Outbox() Outbox { return l.outbox() }

// Schemas returns the delivered schemas' aggregate.
func (l *Ledger) Schemas() Schemas { return l.schemas() }

// Tokens returns the issued tokens' aggregate.
func (l *Ledger) Tokens() Tokens { return l.tokens() }

// Restates returns the restatement checks' aggregate.
func (l *Ledger) Restates() Restates { return l.restates() }

// Seeds returns the reseeds' aggregate.
func (l *Ledger) Seeds() Seeds { return l.seeds() }

// The same inside the package, for one aggregate's method that uses
// another's.
func (k *kernel) partitions() Partitions { return Partitions{k} }
func (k *kernel) schedule() Schedule     { return Schedule{k} }
func (k *kernel) accounts() Accounts     { return Accounts{k} }
func (k *kernel) fleet() Fleet           { return Fleet{k} }
func (k *kernel) slices() Slices         { return Slices{k} }
func (k *kernel) outbox() Outbox         { return Outbox{k} }
func (k *kernel) schemas() Schemas       { return Schemas{k} }
func (k *kernel) tokens() Tokens         { return Tokens{k} }
func (k *kernel) restates() Restates     { return Restates{k} }
func (k *kernel) seeds() Seeds           { return Seeds{k} }
