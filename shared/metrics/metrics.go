// Package metrics publishes CloudWatch metrics the Lambda way: one embedded
// metric format (EMF) JSON line on stdout per event, which CloudWatch Logs
// turns into metrics with no API call and no extra permission (O2).
package metrics

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"
)

// Namespace is daybook's CloudWatch namespace; template.yaml's alarms use it.
const Namespace = "daybook"

// TableBrokenDeliveries counts days delivered while the dataset's Iceberg
// table could not be read (the files were delivered; the table waits for
// `daybook table repair`); template.yaml alarms on it.
const TableBrokenDeliveries = "TableBrokenDeliveries"

// Units.
const (
	Count   = "Count"
	Bytes   = "Bytes"
	Seconds = "Seconds"
)

// Metric is one value.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Emitter writes EMF lines.
type Emitter struct {
	W     io.Writer
	Now   func() time.Time
	Stage string
	mu    sync.Mutex
}

// Emit writes one EMF line with the metrics under the Stage dimension;
// props are extra searchable fields (account, dataset, day), not dimensions,
// so they cost nothing in metric cardinality.
func (e *Emitter) Emit(props map[string]any, ms ...Metric) error {
	if e == nil || e.W == nil || len(ms) == 0 {
		return nil
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	defs := make([]map[string]string, 0, len(ms))
	line := map[string]any{}
	for k, v := range props {
		line[k] = v
	}
	for _, m := range ms {
		defs = append(defs, map[string]string{"Name": m.Name, "Unit": m.Unit})
		line[m.Name] = m.Value
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i]["Name"] < defs[j]["Name"] })
	line["Stage"] = e.Stage
	line["_aws"] = map[string]any{
		"Timestamp": now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  Namespace,
			"Dimensions": [][]string{{"Stage"}},
			"Metrics":    defs,
		}},
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.W.Write(append(b, '\n'))
	return err
}
