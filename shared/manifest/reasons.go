package manifest

import "strings"

// Code says why a dataset is missing from a day's delivery manifest, in one
// word a program can switch on. Each missing dataset carries its code, and
// a sentence for people (Sentence) that starts its "reason"; neither ever
// carries the raw error, which may name database users, hosts, request ids
// or SQL and stays in daybook's logs and ledger. This file is the one home
// of the codes and their sentences: the delivery manifest writes them and
// the bucket's README (shared/bucketdocs) documents them from here. The
// list is part of the delivery manifest's contract: codes are added, never
// renamed or removed.
//
//	not_exported_yet           the day has not been exported yet; it will be, automatically
//	queued_for_reexport        the day is queued to be exported again; the earlier delivery is withdrawn until then
//	running                    the day is being exported now
//	source_unavailable         the last attempt could not read the source data
//	destination_denied         the last attempt was denied access to the bucket
//	destination_missing        the last attempt found no such bucket
//	destination_misconfigured  the destination does not say which AWS account owns the bucket; nothing was written
//	schema_mismatch            the source data did not fit the dataset's declared schema or day
//	timed_out                  the last attempt ran out of time
//	internal                   the last attempt failed inside daybook
//	stopped_retrying           every attempt failed; retries stopped until an operator acts ("cause" says why)
//
// One more code is not a reason a dataset is missing, and so is not in
// Codes or a delivery manifest's list: table_broken, a day whose files were
// delivered while the dataset's Iceberg table could not take them (its
// metadata in the bucket cannot be used). The ledger records it with the
// partition, operators see it with its repair command, and the bucket's
// README tells the customer what it means.
//
// The causes (source_unavailable through internal) are retried
// automatically with backoff until the attempts run out; then the code is
// stopped_retrying and the manifest's "cause" keeps the last attempt's code.
type Code string

// The codes.
const (
	CodeNotExportedYet     Code = "not_exported_yet"
	CodeQueuedForReexport  Code = "queued_for_reexport"
	CodeRunning            Code = "running"
	CodeSourceUnavailable  Code = "source_unavailable"
	CodeDestinationDenied  Code = "destination_denied"
	CodeDestinationMissing Code = "destination_missing"
	// CodeDestinationMisconfigured: the expected bucket owner cannot be
	// determined (no expected_bucket_owner, no account in the role ARN,
	// and the deployment's own account id unknown for its own role), so
	// daybook writes nothing rather than write to a bucket it cannot check
	// (account.ErrNoBucketOwner). The sender has to correct the account.
	CodeDestinationMisconfigured Code = "destination_misconfigured"
	// CodeDestinationCrowded: the day's folder in the bucket holds more
	// objects, or more unfinished uploads, than an export lists there
	// (bucket.ErrTooMany: bucket.MaxStaleListed, bucket.MaxUploadsListed),
	// so the export stopped at its cleanup, before the manifest and
	// _SUCCESS. The objects are not daybook's: the bucket's owner removes
	// them.
	CodeDestinationCrowded Code = "destination_crowded"
	CodeSchemaMismatch     Code = "schema_mismatch"
	CodeTimedOut           Code = "timed_out"
	CodeInternal           Code = "internal"
	CodeStoppedRetrying    Code = "stopped_retrying"
	// CodeTableBroken: the day's files were delivered, and the dataset's
	// Iceberg table (destination.table_format: iceberg) did not take them,
	// because its metadata in the bucket cannot be used (damaged, planted,
	// or changed by another tool). Not a reason a dataset is missing (not
	// in Codes): the files are the product and keep flowing; the table
	// waits for `daybook table repair`.
	CodeTableBroken Code = "table_broken"
)

// sentences are written for the customer who reads the bucket: no internal
// names, hosts or error text, and nothing about retries, which the delivery
// manifest says after the sentence (see missing).
var sentences = map[Code]string{
	CodeNotExportedYet:           "This day has not been exported yet; it will be exported automatically, normally with the next export cycle.",
	CodeQueuedForReexport:        "This day is queued to be exported again, for example because late data arrived; keep using your copy of the earlier delivery until it is delivered again.",
	CodeRunning:                  "This day is being exported now; its files are not complete until its _SUCCESS appears.",
	CodeSourceUnavailable:        "The source data could not be read on the sender's side.",
	CodeDestinationDenied:        "Writing to your bucket was refused (bucket policy, role, encryption key or bucket owner); a change on your side may be needed.",
	CodeDestinationMissing:       "Your bucket (or its endpoint) could not be found: check the destination's bucket name.",
	CodeDestinationMisconfigured: "The destination settings do not say which AWS account owns your bucket, so nothing was written to it; the sender has to correct them.",
	CodeDestinationCrowded:       "This day's folder in your bucket holds more objects (or unfinished uploads) than an export reads there, so the day could not be delivered; remove the objects the sender did not deliver there.",
	CodeSchemaMismatch:           "The source data for this day did not fit the dataset's published schema or day, so nothing was delivered rather than wrong data; the sender has to fix it.",
	CodeTimedOut:                 "The export of this day ran out of time and was stopped.",
	CodeInternal:                 "The export failed because of an unexpected error on the sender's side.",
	CodeStoppedRetrying:          "The export failed on every attempt and stopped retrying; it waits for the sender to export the day again.",
	CodeTableBroken:              "The day's files were delivered, but the dataset's Iceberg table was not updated: its metadata in your bucket cannot be read as daybook wrote it (damaged, or changed by another tool). The folders stay complete; the table waits for the sender to repair it.",
}

// Codes lists every code, in the documented order.
func Codes() []Code {
	return []Code{CodeNotExportedYet, CodeQueuedForReexport, CodeRunning, CodeSourceUnavailable, CodeDestinationDenied,
		CodeDestinationMissing, CodeDestinationMisconfigured, CodeDestinationCrowded, CodeSchemaMismatch, CodeTimedOut, CodeInternal, CodeStoppedRetrying}
}

// Sentence is the code's customer-safe sentence ("" for an unknown code).
func (c Code) Sentence() string { return sentences[c] }

// IsCause reports whether c says why an attempt failed (and so may start a
// failed partition's ledger error; see CauseOf).
func (c Code) IsCause() bool {
	switch c {
	case CodeSourceUnavailable, CodeDestinationDenied, CodeDestinationMissing, CodeDestinationMisconfigured,
		CodeDestinationCrowded, CodeSchemaMismatch, CodeTimedOut, CodeInternal:
		return true
	}
	return false
}

// CauseText is the text the ledger stores for a failed attempt: the cause
// code, ": ", then the raw error for operators. CauseOf reads the code back.
func CauseText(c Code, err error) string { return string(c) + ": " + err.Error() }

// CauseOf returns the cause code a ledger error starts with (see CauseText).
// An error written otherwise is internal, except the ledger's own record of
// a claim whose lease ran out (its exporter died or hung), which timed out.
func CauseOf(lastError string) Code {
	if word, _, ok := strings.Cut(lastError, ": "); ok && Code(word).IsCause() {
		return Code(word)
	}
	if strings.HasPrefix(lastError, "claim lease expired") {
		return CodeTimedOut
	}
	return CodeInternal
}
