package bucketdocs

// MissingReason is one code a delivery manifest may give in
// datasets_missing[].reason, with the sentence the bucket README shows a
// customer for it.
type MissingReason struct {
	Code    string
	Meaning string
}

// MissingReasons is the one list of missing-dataset reason codes the
// README documents, in the order it shows them. The delivery manifest's
// writer should take its codes from here (or move this list next to it and
// point the README at it), so the README never documents a code the
// manifest does not write, or the reverse. Every sentence is written for
// the customer: no internal names, hosts or error text.
var MissingReasons = []MissingReason{
	{"not_exported_yet", "The day has closed but its export has not run yet; it normally arrives with the next export cycle."},
	{"queued_for_reexport", "The day was delivered before and is queued to be exported again, for example because late data arrived; keep using your copy of the earlier delivery until it is delivered again."},
	{"running", "The day is being exported right now; its files are not complete until its _SUCCESS appears."},
	{"source_unavailable", "The data for the day could not be read on the sender's side; the export is retried automatically."},
	{"destination_denied", "Writing to your bucket was refused (bucket policy, role, encryption key or bucket owner); the export is retried, and a change on your side may be needed."},
	{"destination_missing", "Your bucket (or its endpoint) could not be found; the export is retried until it is reachable again."},
	{"schema_mismatch", "The day's data did not match the published schema, so nothing was delivered rather than wrong data; the sender has to fix it before the day arrives."},
	{"timed_out", "The export of the day ran out of time; it is retried automatically."},
	{"stopped_retrying", "The export failed repeatedly and stopped retrying on its own; the sender has been alerted and will export the day again."},
	{"internal", "An unexpected error on the sender's side; the export is retried automatically."},
}
