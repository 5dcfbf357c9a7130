package ledger

// itemKind is one kind of item of the table: what its keys look like,
// what it stores, which sparse indexes it is in and who writes it. kinds
// lists every kind; the package doc's table and docs/architecture.md's are
// checked against it (TestItemKindsDocumented), so a kind added here and
// not there, or described there and not here, fails.
type itemKind struct {
	// name is the kind's name, as both item tables spell it.
	name string
	// prefix is the constant the key starts with (pk, or pk and sk when
	// the pk is shared by several kinds).
	prefix string
	// pk and sk are the key shapes, as both tables write them.
	pk, sk string
	// record is the item's stored form, whose dynamodbav tags are its
	// attributes; attrs lists the attributes of a kind without one, or
	// those its record does not hold.
	record any
	attrs  []string
	// due, fleet and restate are the entries the kind carries in the
	// sparse indexes (hash key shape), "" if none.
	due, fleet, restate string
	// writers names who writes it.
	writers string
}

// kinds is the registry of item kinds.
var kinds = []itemKind{
	{name: "account record", prefix: pkAccounts, pk: "ACCOUNTS", sk: "<account id>",
		record: accountRecord{}, fleet: fleetWake + "<nn> (while enabled)",
		writers: "cmd/daybook (account put, start, delete); the wake fields: sweeper (SetNextWake, ReconcileWake), exporter and console (Wake after a transition)"},
	{name: "watermark", prefix: pkWMPrefix, pk: "WM#<account>", sk: "<dataset>",
		record: watermarkRecord{}, writers: "sweeper (AdvanceWatermark); cmd/daybook account delete --purge removes it"},
	{name: "partition row", prefix: pkPartPrefix, pk: "P#<account>#<dataset>", sk: "YYYY-MM-DD",
		record: rowRecord{},
		due:    "<account> (while due or stopped)", fleet: fleetStopped + "<nn> (while stopped), " + fleetStale + "<nn> (its own stale mark, after a transition until a sweep refreshes the account's summary)", restate: restateShardPrefix + "<nn> (while its late-data check is scheduled)",
		writers: "sweeper (Materialize, Claim, Release), exporter (ClaimManual, Start, Complete, Fail, restatements, reseeds), cmd/daybook and console (Requeue, re-export requests, table repair)"},
	{name: "history item", prefix: pkHistoryPrefix, pk: "H#<account>#<dataset>#<day>", sk: "<started_at>#<attempt>#<generation>",
		record: attemptRecord{}, writers: "exporter (after Complete, Fail), sweeper (a Claim taking over a dead started claim)"},
	{name: "export stats", prefix: pkStats + "/" + skExports, pk: "STATS", sk: "EXPORTS#<hour>",
		record: statsRecord{}, writers: "exporter (Complete)"},
	{name: "reconcile mark", prefix: pkStats + "/" + skReconcile, pk: "STATS", sk: "RECONCILE",
		record: statsRecord{}, writers: "sweeper (ClaimReconcile)"},
	{name: "claim budget", prefix: pkStats + "/" + skBudgetPrefix, pk: "STATS", sk: "BUDGET#<scope>",
		record: budgetRecord{}, writers: "sweeper (ReserveClaims)"},
	{name: "seed item", prefix: pkSeedPrefix, pk: "SEED#<account>", sk: "<dataset>",
		record: seedRecord{}, writers: "exporter (StartReseed, SeedDayDone, FinishReseed)"},
	{name: "slice plan", prefix: pkSlicePrefix + "/" + skSlicePlan, pk: "SL#<account>#<dataset>#<day>", sk: "PLAN",
		record: sliceRecord{}, writers: "exporter (PlanSlices, ClaimSliceCommit)"},
	{name: "slice", prefix: pkSlicePrefix + "/" + skSlicePrefix, pk: "SL#<account>#<dataset>#<day>", sk: "S#<nnnn>",
		record: sliceRecord{}, writers: "exporter (PlanSlices, StartSlice, CompleteSlice, FailSlice)"},
	{name: "issued token", prefix: pkTokenPrefix, pk: "T#<account>#<dataset>#<day>", sk: "<token>",
		record: tokenRecord{}, writers: "sweeper (Claim), exporter (PlanSlices, under a claim or a manual claim)"},
	{name: "isolation guard", prefix: pkGuards, pk: "GUARDS", sk: "<guard key>",
		record: guardRecord{}, writers: "cmd/daybook (account put, delete, fleet repair: EnsureGuards)"},
	{name: "account change", prefix: pkEventPrefix, pk: "AE#<account>", sk: "<at>#<version>",
		record: eventRecord{}, writers: "cmd/daybook (account put, start, delete)"},
	{name: "outbox event", prefix: pkOutboxPrefix, pk: "OB#<account>#<dataset>#<day>", sk: "C#<gen> | S#<gen>#<at>",
		record: outboxRecord{}, due: dueOutbox + "<n> (while pending)",
		writers: "exporter (a committed event, RecordEvent), the transition that stops a partition (sweeper, exporter), sweeper (EventPublished)"},
	{name: "fleet summary", prefix: pkSummaryPrefix + "/" + skSummary, pk: "FS#<account>", sk: "SUMMARY",
		record: summaryRecord{}, fleet: fleetSummary + "<nn>",
		writers: "sweeper (RefreshMarked), cmd/daybook (Refresh), console with actions and cmd/daybook status (FleetSummary builds a missing one; a read-only console only computes it, FleetSummaryReadOnly)"},
	{name: "summary name", prefix: pkSummaryPrefix + "/" + skSummaryName, pk: "FS#<account>", sk: "NAME",
		record: summaryRecord{}, fleet: fleetName + "<nn>", writers: "as the fleet summary"},
	{name: "stale mark", prefix: pkSummaryPrefix + "/" + skSummaryStale, pk: "FS#<account>", sk: "STALE",
		attrs: []string{attrAccountID, AttrFleetShard, AttrFleetKey}, fleet: fleetStale + "<nn>",
		writers: "account writes (cmd/daybook, console), writes of many rows (sweeper Materialize; cmd/daybook and console Requeue, re-export requests), transitions that stop a partition (sweeper, exporter); sweeper (RefreshMarked) removes it"},
	{name: "delivered schema", prefix: pkSchemas, pk: "SCHEMAS", sk: "<dataset>#<contract>",
		record: schemaRecord{}, writers: "exporter (RecordSchema, after a commit)"},
}
