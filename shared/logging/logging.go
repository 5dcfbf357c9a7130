// Package logging builds the JSON slog logger the three functions use
// (sweeper, exporter, console). Lines use
// the field names of Lambda's JSON log format — timestamp, level, message,
// requestId — so Lambda's application log-level filtering
// (LoggingConfig.ApplicationLogLevel) and CloudWatch Logs Insights read them
// as AWS documents. Every line logged with a Lambda context carries the
// request id, and callers add account, dataset, day, generation and run id
// with Logger.With.
package logging

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Field names of Lambda's JSON log format.
const (
	KeyTimestamp = "timestamp"
	KeyLevel     = "level"
	KeyMessage   = "message"
	KeyRequestID = "requestId"
)

// timestampFormat is Lambda's: RFC 3339 in UTC with milliseconds.
const timestampFormat = "2006-01-02T15:04:05.000Z"

// New returns a JSON logger writing to w at level.
func New(w io.Writer, level slog.Level) *slog.Logger {
	base := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: lambdaKeys})
	return slog.New(requestIDHandler{base: base, h: base})
}

// ForFunction is a function's log: New at level (a LOG_LEVEL value,
// ParseLevel), every line naming the function.
func ForFunction(w io.Writer, level, function string) *slog.Logger {
	return New(w, ParseLevel(level)).With("function", function)
}

// lambdaKeys renames slog's built-in keys to Lambda's and writes the level
// as Lambda spells it (TRACE, DEBUG, INFO, WARN, ERROR, FATAL).
func lambdaKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		if a.Value.Kind() == slog.KindTime {
			return slog.String(KeyTimestamp, a.Value.Time().UTC().Format(timestampFormat))
		}
		return slog.Attr{Key: KeyTimestamp, Value: a.Value}
	case slog.MessageKey:
		return slog.Attr{Key: KeyMessage, Value: a.Value}
	case slog.LevelKey:
		return slog.String(KeyLevel, levelName(a.Value))
	}
	return a
}

func levelName(v slog.Value) string {
	l, ok := v.Any().(slog.Level)
	if !ok {
		return v.String()
	}
	switch {
	case l < slog.LevelDebug:
		return "TRACE"
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	case l < slog.LevelError+4:
		return "ERROR"
	}
	return "FATAL"
}

// ParseLevel maps AWS_LAMBDA_LOG_LEVEL / LOG_LEVEL values (DEBUG, INFO, WARN,
// ERROR; Lambda also uses TRACE and FATAL) to a slog level.
func ParseLevel(s string) slog.Level {
	switch s {
	case "TRACE", "DEBUG", "debug", "trace":
		return slog.LevelDebug
	case "WARN", "warn":
		return slog.LevelWarn
	case "ERROR", "FATAL", "error", "fatal":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// requestIDHandler adds requestId at the top level of every line logged
// with a Lambda context, even under WithGroup: it keeps the handler without
// groups or attributes (base) and the steps that built h from it, and
// replays them after adding the request id.
type requestIDHandler struct {
	base  slog.Handler
	h     slog.Handler
	steps []func(slog.Handler) slog.Handler
}

func (h requestIDHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.AwsRequestID == "" {
		return h.h.Handle(ctx, r)
	}
	withID := h.base.WithAttrs([]slog.Attr{slog.String(KeyRequestID, lc.AwsRequestID)})
	for _, step := range h.steps {
		withID = step(withID)
	}
	return withID.Handle(ctx, r)
}

func (h requestIDHandler) with(step func(slog.Handler) slog.Handler) requestIDHandler {
	return requestIDHandler{base: h.base, h: step(h.h), steps: append(append([]func(slog.Handler) slog.Handler(nil), h.steps...), step)}
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.with(func(x slog.Handler) slog.Handler { return x.WithAttrs(as) })
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return h.with(func(x slog.Handler) slog.Handler { return x.WithGroup(name) })
}
