package samstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestCountedFailuresAreAlarmed: what fails after a recorded transition
// (the account's wake time not lowered, the attempt's history item not
// written) is only logged and counted, so each count has an alarm on the
// template: any such failure in five minutes raises it, and it goes to the
// alarm topic when there is one. The metric names are the ones the ledger's
// Reporter emits (read from their EMF lines, not from the source text).
func TestCountedFailuresAreAlarmed(t *testing.T) {
	var buf bytes.Buffer
	rep := ledger.Reporter{Metrics: &metrics.Emitter{W: &buf, Stage: "alarmtest"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	rep.WakeFailed(ctx, "acct_a", errors.New("throttled"))
	rep.HistoryFailed(ctx, partition.Key{AccountID: "acct_a", Dataset: "events", Day: civil.MustParse("2026-03-05")}, errors.New("throttled"))
	var emitted []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var emf struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace string
					Metrics   []struct{ Name string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(line), &emf); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		for _, d := range emf.AWS.CloudWatchMetrics {
			for _, m := range d.Metrics {
				emitted = append(emitted, d.Namespace+"/"+m.Name)
			}
		}
	}
	if len(emitted) != 2 {
		t.Fatalf("the reporter emitted %v, want two metrics", emitted)
	}
	// The exporter counts a day delivered while its Iceberg table is
	// broken (the files flow; the table waits for a repair).
	emitted = append(emitted, metrics.Namespace+"/"+metrics.TableBrokenDeliveries)

	body, err := samstack.Translate(ctx, "../../../template.yaml", motoserver.Region)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				Namespace, MetricName, Statistic, ComparisonOperator, TreatMissingData string
				Threshold                                                              float64
				Period, EvaluationPeriods                                              int
				Dimensions                                                             []struct {
					Name  string
					Value any
				}
				AlarmActions any
			}
		}
	}
	if err := json.Unmarshal(body, &tmpl); err != nil {
		t.Fatal(err)
	}
	for _, name := range emitted {
		var found []string
		for id, r := range tmpl.Resources {
			p := r.Properties
			if r.Type != "AWS::CloudWatch::Alarm" || p.Namespace+"/"+p.MetricName != name {
				continue
			}
			found = append(found, id)
			dims, _ := json.Marshal(p.Dimensions)
			actions, _ := json.Marshal(p.AlarmActions)
			if string(dims) != `[{"Name":"Stage","Value":{"Ref":"Stage"}}]` {
				t.Errorf("alarm %s: dimensions %s, want the Stage the metric is emitted under", id, dims)
			}
			if p.Statistic != "Sum" || p.Threshold != 0 || p.ComparisonOperator != "GreaterThanThreshold" || p.Period != 300 || p.EvaluationPeriods != 1 {
				t.Errorf("alarm %s: %s over %d s %s %v (%d periods), want any failure in 5 minutes (Sum > 0)", id, p.Statistic, p.Period, p.ComparisonOperator, p.Threshold, p.EvaluationPeriods)
			}
			if p.TreatMissingData != "notBreaching" {
				t.Errorf("alarm %s: TreatMissingData %s; a count is only emitted on a failure, so missing data is none", id, p.TreatMissingData)
			}
			if string(actions) != `{"Fn::If":["HasAlarmTopic",[{"Ref":"AlarmTopicArn"}],{"Ref":"AWS::NoValue"}]}` {
				t.Errorf("alarm %s: AlarmActions %s, want the alarm topic when there is one", id, actions)
			}
		}
		if len(found) != 1 {
			t.Errorf("metric %s: alarms %v, want one", name, found)
		}
	}
}
