package metrics

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestEmitEMF(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e := &Emitter{W: &buf, Stage: "prod", Now: func() time.Time { return time.UnixMilli(1764418500000) }}
	if err := e.Emit(map[string]any{"account": "acct_a"}, Metric{"PartitionsExported", Count, 1}, Metric{"BytesExported", Bytes, 2048}); err != nil {
		t.Fatal(err)
	}
	var line struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Stage              string
		Account            string  `json:"account"`
		PartitionsExported float64 `json:"PartitionsExported"`
		BytesExported      float64 `json:"BytesExported"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	cw := line.AWS.CloudWatchMetrics[0]
	if line.AWS.Timestamp != 1764418500000 || cw.Namespace != "daybook" || cw.Dimensions[0][0] != "Stage" || line.Stage != "prod" {
		t.Fatalf("envelope %+v", line)
	}
	if len(cw.Metrics) != 2 || cw.Metrics[0].Name != "BytesExported" || cw.Metrics[0].Unit != "Bytes" || line.BytesExported != 2048 || line.PartitionsExported != 1 || line.Account != "acct_a" {
		t.Fatalf("metrics %+v", line)
	}
	var nilEmitter *Emitter
	if err := nilEmitter.Emit(nil, Metric{"X", Count, 1}); err != nil {
		t.Fatal(err)
	}
}
