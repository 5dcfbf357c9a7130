package manifest

// ReasonRestatement is the reason of a generation exported because its day
// changed in the source after an earlier generation was exported (late
// data found by the restatement check).
const ReasonRestatement = "restatement"

// Restatement says that a generation replaced an earlier one whose day had
// changed in the source since it was exported, in both `_manifest.json` and
// the delivery manifest: the generation and row count it replaced, and its
// own row count.
type Restatement struct {
	PreviousGeneration int64 `json:"previous_generation"`
	PreviousRows       int64 `json:"previous_rows"`
	Rows               int64 `json:"rows"`
}
