package ops

import (
	"context"
	"errors"
	"time"

	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Attempt is one attempt of a partition, from the ledger's attempt history.
type Attempt struct {
	Attempt     int    `json:"attempt"`
	Outcome     string `json:"outcome"`
	Reason      string `json:"reason,omitempty"`
	ClaimedAt   string `json:"claimed_at,omitempty"`
	StartedAt   string `json:"started_at,omitempty"`
	FinishedAt  string `json:"finished_at,omitempty"`
	DurationMS  int64  `json:"duration_ms,omitempty"`
	Generation  int64  `json:"generation,omitempty"`
	Rows        int64  `json:"rows,omitempty"`
	Bytes       int64  `json:"bytes,omitempty"`
	Files       int    `json:"files,omitempty"`
	ManifestKey string `json:"manifest_key,omitempty"`
	Error       string `json:"error,omitempty"`
	// RequestedBy is who asked for the attempt's manual action, if any.
	RequestedBy string `json:"requested_by,omitempty"`
}

// PartitionHistory is a partition's current row and every recorded attempt.
type PartitionHistory struct {
	Account  string    `json:"account"`
	Dataset  string    `json:"dataset"`
	Day      string    `json:"day"`
	Current  *Day      `json:"current,omitempty"`
	Attempts []Attempt `json:"attempts"`
	// Slices is the progress of the running attempt when it exports the
	// day in slices.
	Slices *SliceProgress `json:"slices,omitempty"`
}

// SliceProgress is a running attempt's slices: how many are in and each
// one's state.
type SliceProgress struct {
	Generation int64         `json:"generation"`
	Planned    string        `json:"planned"`
	Expected   int64         `json:"expected_rows"`
	Completed  int           `json:"completed"`
	Rows       int64         `json:"rows"`
	Slices     []SliceStatus `json:"slices"`
}

// SliceStatus is one slice of a running attempt.
type SliceStatus struct {
	Slice      int    `json:"slice"`
	State      string `json:"state"`
	Attempts   int    `json:"attempts"`
	Rows       int64  `json:"rows,omitempty"`
	Bytes      int64  `json:"bytes,omitempty"`
	LeaseUntil string `json:"lease_until,omitempty"`
	Error      string `json:"error,omitempty"`
}

// slicesOf is the progress of the plan of the row's running claim, nil when
// the row does not run in slices.
func slicesOf(ctx context.Context, r Reader, row ledger.Row) (*SliceProgress, error) {
	if row.State != ledger.StateRunning {
		return nil, nil
	}
	plan, sls, err := r.SlicesOf(ctx, row.Key)
	if errors.Is(err, ledger.ErrNotFound) || (err == nil && plan.Token != row.ClaimToken) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := &SliceProgress{Generation: plan.Generation, Planned: FormatTime(plan.StartedAt), Expected: plan.ExpectedRows, Slices: []SliceStatus{}}
	for _, sl := range sls {
		st := SliceStatus{Slice: sl.Index, State: string(sl.State), Attempts: sl.Attempts, Error: sl.LastError}
		switch sl.State {
		case ledger.StateCompleted:
			p.Completed++
			p.Rows += sl.Rows
			st.Rows, st.Bytes = sl.Rows, sl.Bytes
		case ledger.StateRunning:
			st.LeaseUntil = FormatTime(sl.LeaseUntil)
		}
		p.Slices = append(p.Slices, st)
	}
	return p, nil
}

// LastFailure is the newest attempt that did not complete, if any.
func (h PartitionHistory) LastFailure() *Attempt {
	for i := len(h.Attempts) - 1; i >= 0; i-- {
		if h.Attempts[i].Outcome != string(ledger.OutcomeCompleted) {
			return &h.Attempts[i]
		}
	}
	return nil
}

// History reads a partition's row (Current is nil when it has none) and its
// attempt history, oldest first, at the clock now.
func History(ctx context.Context, r Reader, key partition.Key, now time.Time) (PartitionHistory, error) {
	res := PartitionHistory{Account: key.AccountID, Dataset: key.Dataset, Day: key.Day.String(), Attempts: []Attempt{}}
	row, err := r.Get(ctx, key)
	switch {
	case err == nil:
		cur := DayOf(row, now)
		res.Current = &cur
		if res.Slices, err = slicesOf(ctx, r, row); err != nil {
			return res, err
		}
	case !errors.Is(err, ledger.ErrNotFound):
		return res, err
	}
	hist, err := r.History(ctx, key)
	if err != nil {
		return res, err
	}
	for _, h := range hist {
		dur := h.DurationMS
		if dur == 0 && !h.StartedAt.IsZero() && h.FinishedAt.After(h.StartedAt) {
			dur = h.FinishedAt.Sub(h.StartedAt).Milliseconds()
		}
		res.Attempts = append(res.Attempts, Attempt{
			Attempt: h.Attempt, Outcome: string(h.Outcome), Reason: string(h.Reason), ClaimedAt: FormatTime(h.ClaimedAt),
			StartedAt: FormatTime(h.StartedAt), FinishedAt: FormatTime(h.FinishedAt), DurationMS: dur, Generation: h.Generation,
			Rows: h.Rows, Bytes: h.Bytes, Files: h.Files, ManifestKey: h.ManifestKey, Error: h.Error, RequestedBy: h.RequestedBy,
		})
	}
	return res, nil
}
