// Package ledger is the partition ledger and the only package
// that knows the layout of the daybook DynamoDB table.
//
// # Table layout
//
// One table (template.yaml, LedgerTable) holds these kinds of item; the
// registry of kinds (registry.go) lists each with its attributes, index
// entries and writers, and a test checks this table against it. Every item
// a conditional update wrote also carries write_id, that write's fresh id
// (kernel.update):
//
//	account record:  pk=ACCOUNTS  sk=<account id>
//	    doc (JSON of account.Account), enabled, account_id, version, guards, updated_at,
//	    wake_seq, woken_at, closed_through; fleet_shard, fleet_key while enabled (wake.go)
//	watermark:  pk=WM#<account>  sk=<dataset>
//	    through (last materialized day), account_id, dataset, updated_at
//	partition row:  pk=P#<account>#<dataset>  sk=YYYY-MM-DD
//	    account_id, dataset, day, state, attempts, claim_token, claimed_at, started_at, write_id,
//	    lease_until, next_attempt_at, last_error, table_error, exhausted, generation,
//	    generation_reserved, rows, bytes, files, manifest_key, duration_ms, completed_at,
//	    reason, requested_by, rerun_requested, reexport_requested_at/_by, reexports_served,
//	    updated_at,
//	    fingerprint, fingerprint_at, restated_from, restated_rows, seed_epoch, slice_planned;
//	    due_account, due_key while due or stopped; fleet_shard, fleet_key while stopped
//	    (X#<nn>), and after a transition as its own stale mark (Z#<nn>) until a sweep
//	    refreshes the account's summary (kernel.go);
//	    restate_account, restate_key while its late-data check is scheduled (restate.go)
//	history item:  pk=H#<account>#<dataset>#<day>  sk=<started_at>#<attempt>#<generation>
//	    account_id, dataset, day, attempt, outcome, reason, claimed_at, started_at,
//	    finished_at, generation, rows, bytes, files, duration_ms, manifest_key, error,
//	    expires_at (TTL) (history.go)
//	export stats:  pk=STATS  sk=EXPORTS#<hour>
//	    exports, export_ms, expires_at (TTL), updated_at (stats.go)
//	reconcile mark:  pk=STATS  sk=RECONCILE
//	    reconciled_at, updated_at (reconcile.go)
//	claim budget:  pk=STATS  sk=BUDGET#<scope>
//	    budget_until, budget_total, budget_used (budget.go)
//	seed item:  pk=SEED#<account>  sk=<dataset>
//	    seed_epoch, state, seed_first_day, seed_last_day, seed_days, seed_done_days, ... (reseed.go)
//	slice plan:  pk=SL#<account>#<dataset>#<day>  sk=PLAN
//	    partition_token, slice_count, generation, run_id, destination, fingerprint,
//	    commit_token, slice_bounds_us, ..., expires_at (TTL) (slice.go)
//	slice:  pk=SL#<account>#<dataset>#<day>  sk=S#<nnnn>
//	    slice_index, state, claim_token, write_id, attempts, lease_until, rows, bytes, slice_files,
//	    slice_from_us, slice_to_us, ..., expires_at (TTL) (slice.go)
//	issued token:  pk=T#<account>#<dataset>#<day>  sk=<token>
//	    the claim tokens handed out, kept 30 days (expires_at TTL), so a forged token is
//	    told from a redelivered one (token.go)
//	isolation guard:  pk=GUARDS  sk=<guard key>
//	    owner, under, what: one per store, bucket and prefix segment, and per role (accountwrite.go)
//	account change:  pk=AE#<account>  sk=<at>#<version>
//	    who changed what of an account (accountwrite.go)
//	outbox event:  pk=OB#<account>#<dataset>#<day>  sk=C#<gen> | S#<gen>#<at>
//	    one partition event, recorded once; due_account=OB#<n> while pending (outbox.go)
//	fleet summary:  pk=FS#<account>  sk=SUMMARY
//	    the account's line of the fleet view, in the fleet index under F#<nn> (summary.go)
//	summary name:  pk=FS#<account>  sk=NAME
//	    the same line by name, in the fleet index under N#<nn> (summary.go)
//	stale mark:  pk=FS#<account>  sk=STALE
//	    asks a sweep to refresh the account's summary, in the fleet index under Z#<nn> (summary.go)
//	delivered schema:  pk=SCHEMAS  sk=<dataset>#<contract>
//	    dataset, contract, version, schema_doc, schema_sha256, updated_at (schemas.go)
//
// A history item records how one attempt ended (history.go); it is written
// after the transition that ended it ([Partitions.Complete], [Partitions.Fail], or a [Partitions.Claim] or
// [Partitions.ClaimManual] that took over a dead started claim), best effort. Export
// stats feed the sweeper's claim budget (stats.go). Both expire through the
// table's one TTL attribute, expires_at.
//
// Code names every attribute through one constant ([AttrPK], [AttrSK],
// [AttrDueAccount], [AttrDueKey] and [AttrExpiresAt] are exported), and a test
// checks the constants against the struct tags of the items' stored forms
// (stats bucket and reconcile marker share one). A stored value that does
// not parse (a time, a day, a number, a value of the wrong type) is an error
// naming the attribute, the item's key and the value, never a zero value: a
// lease read as zero would look expired.
//
// # The sparse "due" index
//
// A partition row carries due_account=<account> and due_key only while it has
// work to do or waits for an operator, so finding due work never reads
// completed rows, whatever the size of the ledger. The GSI `due` (hash
// due_account, range due_key) holds those rows and the pending outbox events,
// under due_account=OB#<n>, a name no account id can have (outbox.go):
//
//	pending, newest closed day   S#<day>#<dataset>   (MaterializeDays' priority day; read first)
//	queued                       0#<day>#<dataset>
//	pending                      1#<day>#<dataset>
//	failed, attempts left        2#<next_attempt_at>#<day>#<dataset>
//	running                      3#<lease_until>#<day>#<dataset>
//	failed, stopped            9#<day>#<dataset>
//	completed                    (no due_account/due_key: not in the index)
//
// Times in keys and attributes are RFC 3339 UTC at second precision
// (2006-01-02T15:04:05Z): fixed width, so string order is time order.
// [Partitions.DueWork] (and [Partitions.Due]) reads one key range per class with key conditions only
// (no filter): begins_with S#, 0#, 1#, 2# and 3#, the failed and running
// classes from their start so that the first row not yet due gives the
// account's next wake time, and merges them (queued first, then pending and
// failed-and-due, then dead claims; within each, oldest day first) after the
// scheduled class. It never reads the 9# class: a stopped row waits for
// a requeue. [Schedule.CountStopped] counts that class for one account (a COUNT
// Query on begins_with 9#); the sweeper reads the fleet's level of stopped
// partitions from the fleet index instead ([Schedule.StoppedByAccount]), so "stopped
// retrying" is a level it publishes every sweep at a cost that grows
// with the stopped rows only.
//
// # The sparse "fleet" index
//
// GSI `fleet` (hash fleet_shard, range fleet_key) holds enabled accounts by
// wake time (W#<nn> / <wake time>) and stopped partitions (X#<nn> /
// <account>#<dataset>#<day>), nn = [Shard](account) of [FleetShards], so a sweep
// reads the accounts that may have work, and the stopped level, in a fixed
// number of queries whatever the fleet. wake.go describes who moves the wake
// time and how no wake-up is lost; stopped.go the stopped entries. The index
// also holds the accounts' fleet summaries worst first (F#<nn>), by name
// (N#<nn>), and the marks of the summaries to refresh (Z#<nn>), so a page of
// the fleet view is FleetShards queries whatever the fleet (summary.go); a
// row that a transition changed is itself a mark until a sweep refreshed
// its account.
//
// # States and transitions
//
// Every transition is one conditional write of the row ([Partitions.Claim]
// puts its claim token's item first, token.go; a transition that stops a
// partition writes its account's stale mark too, and its event,
// stoptransition.go):
//
//	Materialize     (absent)                          -> pending     attribute_not_exists(pk)
//	Claim           queued | pending | failed-and-due
//	                | running with lease_until < now,
//	                  not started or attempts left    -> running     state condition, new random token
//	ClaimManual     anything but a live running claim -> running, started, attempts=1 (absent rows are created)
//	                live running claim                -> rerun_requested=true, ErrBusy
//	                (either adds the request's id to reexports_served; a request the row holds is ErrServed)
//	Start           running (token), not started      -> started_at set, attempts+1, lease renewed
//	                (a second delivery of the job, or a reclaimed job's old message, gets ErrClaimLost)
//	NoteCommitted   running (token), generation above
//	                the stored and the noted one      -> generation_reserved = generation (claims number above it)
//	                running (token), not above        -> ErrConflict
//	ExpireClaim     running (token)                   -> lease_until in the past (a claim known dead is reclaimable now; its slices' too)
//	Release         running (token), not started      -> previous due state (a reclaimed dead claim: failed, due now)
//	                started                           -> ErrClaimLost (the job got through; row untouched)
//	Complete        running (token)                   -> completed, generation = res.Generation or +1
//	                running (token), rerun_requested  -> queued (manual), generation as above, stats kept
//	                res.Generation not above stored   -> ErrConflict (the claim still holds)
//	Fail            running (token)                   -> failed with backoff, or failed+stopped (9#)
//	                                                     after MaxAttempts
//	                running (token), rerun_requested  -> queued (manual)
//	Requeue         anything but a live running claim -> queued (absent rows are created)
//	                live running claim                -> rerun_requested=true
//	NoteReexportRequested
//	                an existing row, no live claim    -> reexport_requested_at/_by set, state unchanged (reexport.go);
//	                                                     ClaimManual, its re-run and Requeue remove them
//
// After its row write, every transition that leaves a row due at some time
// lowers the account's wake time to it ([Partitions.Requeue], [Partitions.ClaimManual], [Partitions.Fail],
// [Partitions.Complete] and [Partitions.Release], and [Partitions.Claim]'s re-run path; see wake.go); [Partitions.Fail]'s
// stopping branch and [Partitions.Claim]'s retirement add the row to the stopped shard,
// [Partitions.Requeue] and [Partitions.ClaimManual] remove it. [Schedule.Materialize] and [Partitions.Claim] do not wake: only
// the sweeper calls them, and it sets the account's next wake time itself.
//
// A write guarded by a claim token that no longer matches returns [ErrClaimLost].
// A dead claim (lease expired) that started on attempt MaxAttempts is not
// reclaimed: [Partitions.Claim] marks it failed+stopped (9#) and returns [ErrStopped],
// or, if a re-run was requested while it ran, queues it (manual, attempts=0)
// and returns [ErrConflict].
//
// attempts counts runs started since the row was last queued or
// materialized: a run uses an attempt when it starts ([Partitions.Start], or [Partitions.ClaimManual],
// which starts at once), not when it is claimed, so a job that waits in SQS
// longer than the lease is reclaimed without losing an attempt, and a row
// never uses up its attempts without having run. [Partitions.Claim] returns the attempt
// number the run will be. generation counts successful exports and only ever
// increases; [Partitions.Claim] returns the generation the run will commit at least.
//
// # Where each part lives
//
// A [Ledger] hands out its aggregates (aggregates.go), each one part of the
// table with its own methods: [Partitions], [Schedule], [Accounts],
// [Fleet], [Slices], [Outbox], [Schemas], [Tokens], [Restates], [Seeds].
// The kernel they all use: kernel.go (keys, conditional updates and
// transaction items, a row's transition with its stale mark, queries),
// decode.go (stored items back to values), errors.go (every error the
// package returns) and lifecycle.go (the run states partition rows and
// slices share). registry.go lists the item kinds. reexport.go holds the
// note of a re-export request on its way; restate.go the restate index
// (late data) and its transitions; reseed.go reseeds; slice.go and
// slicerun.go days exported in slices; wake.go the wake half of the fleet
// index, stopped.go its stopped half and stoptransition.go the transition that stops a
// partition with its event;
// history.go the attempt history; summary.go and summarypage.go the fleet
// summaries.
package ledger
