package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

func decodeLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestRequestIDOnEveryLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := New(&buf, slog.LevelInfo).With("function", "exporter")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-123"})
	log.InfoContext(ctx, "one", "account", "acct_a")
	log.With("dataset", "events").WarnContext(ctx, "two")
	log.Info("outside an invocation")
	lines := decodeLines(t, buf.Bytes())
	if len(lines) != 3 {
		t.Fatalf("lines: %q", buf.String())
	}
	for i, want := range []string{"req-123", "req-123", ""} {
		got, _ := lines[i][KeyRequestID].(string)
		if got != want || lines[i]["function"] != "exporter" {
			t.Errorf("line %d: requestId %q function %v, want %q", i, got, lines[i]["function"], want)
		}
	}
}

// TestLambdaJSONLogFormat: the keys and values Lambda's log-level filtering
// and CloudWatch Logs Insights read.
func TestLambdaJSONLogFormat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := New(&buf, slog.LevelDebug)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-9"})
	log.DebugContext(ctx, "d")
	log.InfoContext(ctx, "i", "attempt", 2)
	log.WarnContext(ctx, "w")
	log.ErrorContext(ctx, "e", "error", "boom")
	log.Log(ctx, slog.LevelError+4, "f")
	log.WithGroup("export").InfoContext(ctx, "grouped", "message", "kept inside the group")
	lines := decodeLines(t, buf.Bytes())
	tests := []struct {
		level, message string
	}{{"DEBUG", "d"}, {"INFO", "i"}, {"WARN", "w"}, {"ERROR", "e"}, {"FATAL", "f"}, {"INFO", "grouped"}}
	if len(lines) != len(tests) {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	for i, tt := range tests {
		m := lines[i]
		if m[KeyLevel] != tt.level || m[KeyMessage] != tt.message || m[KeyRequestID] != "req-9" {
			t.Errorf("line %d: %v, want level %s message %s", i, m, tt.level, tt.message)
		}
		for _, old := range []string{"time", "msg", "request_id"} {
			if _, ok := m[old]; ok {
				t.Errorf("line %d has slog's %q key: %v", i, old, m)
			}
		}
		ts, _ := m[KeyTimestamp].(string)
		parsed, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || len(ts) != len("2006-01-02T15:04:05.000Z") || parsed.Location() != time.UTC {
			t.Errorf("line %d: timestamp %q (%v), want RFC 3339 UTC with milliseconds", i, ts, err)
		}
	}
	if g, _ := lines[5]["export"].(map[string]any); g["message"] != "kept inside the group" {
		t.Errorf("a grouped attribute was renamed: %v", lines[5])
	}
	if lines[1]["attempt"] != float64(2) || lines[3]["error"] != "boom" {
		t.Errorf("attributes: %v %v", lines[1], lines[3])
	}
}

func TestParseLevel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]slog.Level{"DEBUG": slog.LevelDebug, "TRACE": slog.LevelDebug, "INFO": slog.LevelInfo, "WARN": slog.LevelWarn, "ERROR": slog.LevelError, "": slog.LevelInfo} {
		if got := ParseLevel(in); got != want {
			t.Errorf("ParseLevel(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestForFunction: a function's log is at the level its LOG_LEVEL names,
// and every line names the function.
func TestForFunction(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := ForFunction(&buf, "WARN", "console")
	log.Info("dropped")
	log.Warn("kept")
	lines := decodeLines(t, buf.Bytes())
	if len(lines) != 1 || lines[0][KeyMessage] != "kept" || lines[0]["function"] != "console" {
		t.Fatalf("logged %v, want the WARN line alone, naming the console", lines)
	}
}
