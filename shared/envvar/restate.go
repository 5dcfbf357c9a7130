package envvar

import "time"

// Defaults of the late-data and event settings (restatement checks, the
// event bus), defined here once like the others in daybook.go.
const (
	// DefaultRestateLookbackDays is RESTATE_LOOKBACK_DAYS's default: how many
	// of an account's most recently closed days are checked for late data.
	DefaultRestateLookbackDays = 7
	// DefaultRestateInterval is RESTATE_INTERVAL's default: the least time
	// between two checks of one partition.
	DefaultRestateInterval = 6 * time.Hour
	// DefaultRestatePerSweepCap is RESTATE_PER_SWEEP_CAP's default: the most
	// checks one sweep queues, so the source is never flooded.
	DefaultRestatePerSweepCap = 50
)

// RestateLookbackDays reads RESTATE_LOOKBACK_DAYS (0 turns the checks off).
func (r *Reader) RestateLookbackDays() int {
	return r.Int("RESTATE_LOOKBACK_DAYS", DefaultRestateLookbackDays)
}

// RestateInterval reads RESTATE_INTERVAL, a duration such as 6h; it must be
// at least a minute.
func (r *Reader) RestateInterval() time.Duration {
	d := r.Duration("RESTATE_INTERVAL", DefaultRestateInterval)
	if d < time.Minute {
		v, _ := r.lookup("RESTATE_INTERVAL")
		r.fail("RESTATE_INTERVAL", v, "want at least 1m")
		return DefaultRestateInterval
	}
	return d
}

// RestatePerSweepCap reads RESTATE_PER_SWEEP_CAP, at least 1.
func (r *Reader) RestatePerSweepCap() int {
	n := r.Int("RESTATE_PER_SWEEP_CAP", DefaultRestatePerSweepCap)
	if n < 1 {
		v, _ := r.lookup("RESTATE_PER_SWEEP_CAP")
		r.fail("RESTATE_PER_SWEEP_CAP", v, "want at least 1")
		return DefaultRestatePerSweepCap
	}
	return n
}

// EventBusName reads EVENT_BUS_NAME, the EventBridge bus committed and
// stopped partitions are published on; "" publishes nothing.
func (r *Reader) EventBusName() string { return r.StringOr("EVENT_BUS_NAME", "") }
