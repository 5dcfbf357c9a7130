package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

func TestRequestIDOnEveryLine(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, slog.LevelInfo).With("function", "exporter")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-123"})
	log.InfoContext(ctx, "one", "account", "acct_a")
	log.With("dataset", "events").WarnContext(ctx, "two")
	log.Info("outside an invocation")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("lines: %q", buf.String())
	}
	for i, want := range []string{"req-123", "req-123", ""} {
		var m map[string]any
		if err := json.Unmarshal(lines[i], &m); err != nil {
			t.Fatal(err)
		}
		got, _ := m["request_id"].(string)
		if got != want || m["function"] != "exporter" {
			t.Errorf("line %d: request_id %q function %v, want %q", i, got, m["function"], want)
		}
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"DEBUG": slog.LevelDebug, "TRACE": slog.LevelDebug, "INFO": slog.LevelInfo, "WARN": slog.LevelWarn, "ERROR": slog.LevelError, "": slog.LevelInfo} {
		if got := ParseLevel(in); got != want {
			t.Errorf("ParseLevel(%q) = %v, want %v", in, got, want)
		}
	}
}
