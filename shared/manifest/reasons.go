package manifest

import "strings"

// Code says why a dataset is missing from a day's delivery manifest, in one
// word a program can switch on. Each missing dataset carries its code and a
// sentence for people (Sentence); neither ever carries the raw error, which
// may name database users, hosts, request ids or SQL and stays in daybook's
// logs and ledger. The list is part of the delivery manifest's contract:
// codes are added, never renamed or removed.
//
//	not_exported_yet     the day has not been exported yet; it will be, automatically
//	queued_for_reexport  the day is queued to be exported again; the earlier delivery is withdrawn until then
//	running              the day is being exported now
//	source_unavailable   the last attempt could not read the source data
//	destination_denied   the last attempt was denied access to the bucket
//	destination_missing  the last attempt found no such bucket
//	schema_mismatch      the source data did not fit the dataset's declared schema or day
//	timed_out            the last attempt ran out of time
//	internal             the last attempt failed inside daybook
//	stopped_retrying     every attempt failed; retries stopped until an operator acts ("cause" says why)
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
	CodeSchemaMismatch     Code = "schema_mismatch"
	CodeTimedOut           Code = "timed_out"
	CodeInternal           Code = "internal"
	CodeStoppedRetrying    Code = "stopped_retrying"
)

var sentences = map[Code]string{
	CodeNotExportedYet:     "This day has not been exported yet; it will be exported automatically.",
	CodeQueuedForReexport:  "This day is queued to be exported again; the earlier delivery will be replaced.",
	CodeRunning:            "This day is being exported now.",
	CodeSourceUnavailable:  "The source data could not be read.",
	CodeDestinationDenied:  "daybook was denied access to your bucket: check the role and bucket policy it uses.",
	CodeDestinationMissing: "Your bucket was not found: check the destination's bucket name.",
	CodeSchemaMismatch:     "The source data for this day did not fit the dataset's declared schema or day, so nothing was delivered rather than bad data.",
	CodeTimedOut:           "The export took longer than allowed and was stopped.",
	CodeInternal:           "The export failed because of an internal error.",
	CodeStoppedRetrying:    "The export failed on every attempt and stopped retrying; it waits for an operator.",
}

// Codes lists every code, in the documented order.
func Codes() []Code {
	return []Code{CodeNotExportedYet, CodeQueuedForReexport, CodeRunning, CodeSourceUnavailable, CodeDestinationDenied,
		CodeDestinationMissing, CodeSchemaMismatch, CodeTimedOut, CodeInternal, CodeStoppedRetrying}
}

// Sentence is the code's customer-safe sentence ("" for an unknown code).
func (c Code) Sentence() string { return sentences[c] }

// IsCause reports whether c says why an attempt failed (and so may start a
// failed partition's ledger error; see CauseOf).
func (c Code) IsCause() bool {
	switch c {
	case CodeSourceUnavailable, CodeDestinationDenied, CodeDestinationMissing, CodeSchemaMismatch, CodeTimedOut, CodeInternal:
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
