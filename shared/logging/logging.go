// Package logging builds the JSON slog logger both functions use. Every line
// logged with a Lambda context carries the request id, and callers add
// account, dataset, day, generation and run id with Logger.With (SPEC O2).
package logging

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// New returns a JSON logger writing to w at level.
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(requestIDHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})})
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

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r.AddAttrs(slog.String("request_id", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
