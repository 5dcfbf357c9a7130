package iamcheck

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
)

// ForStage returns the policies of the module's template.yaml deployed as
// stage with params (the others at their defaults) in the local stack's
// account and region, as samstacktest deploys it.
func ForStage(t testing.TB, stage string, params map[string]string) *Policies {
	t.Helper()
	path, err := samstacktest.Template()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"Stage": stage}
	for k, v := range params {
		all[k] = v
	}
	p, err := Load(context.Background(), path, Deployment{Params: all, Account: motoserver.AccountID, Region: motoserver.Region})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Config returns a copy of cfg whose clients reach cfg's endpoint through
// a Proxy that checks every call against fn's policy: what a test hands
// the function's wiring as its AWS configuration. A denied call fails t.
// The proxy stops when t ends.
func Config(t testing.TB, p *Policies, fn string, cfg aws.Config, names Names) aws.Config {
	t.Helper()
	if cfg.BaseEndpoint == nil {
		t.Fatalf("iamcheck: the configuration of %s has no endpoint to check in front of", fn)
	}
	out := cfg.Copy()
	out.BaseEndpoint = aws.String(Endpoint(t, p, Route{Function: fn, Upstream: *cfg.BaseEndpoint, Names: names}))
	return out
}

// Endpoint starts a Proxy for r (its Report: t.Errorf, unless r has its
// own: a test that expects a denial) and returns its URL, a bootstrap's
// AWS_ENDPOINT_URL. The proxy stops when t ends; a denial reported after
// that (a call still in flight) fails the test binary through Finish.
func Endpoint(t testing.TB, p *Policies, r Route) string {
	t.Helper()
	var mu sync.Mutex
	done := false
	name := t.Name()
	own := r.Report
	r.Report = func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case done:
			late.add(name + ": " + msg)
		case own != nil:
			own(msg)
		default:
			t.Errorf("%s", msg)
		}
	}
	px, err := Start(p, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mu.Lock()
		done = true
		mu.Unlock()
		_ = px.Close()
	})
	return px.URL()
}

// late keeps the denials reported after their test ended.
var late = &lateReports{}

type lateReports struct {
	mu   sync.Mutex
	msgs []string
}

func (l *lateReports) add(m string) {
	l.mu.Lock()
	l.msgs = append(l.msgs, m)
	l.mu.Unlock()
}

// Main runs a package's tests (m.Run), then writes the tally (Finish) and
// fails the run for denials reported after their test ended: a package's
// TestMain calls it, or mototest.RunTests does.
func Main(run func() int) int {
	code := run()
	if err := Finish(); err != nil {
		fmt.Fprintln(os.Stderr, "iamcheck:", err)
		code = max(code, 1)
	}
	late.mu.Lock()
	defer late.mu.Unlock()
	for _, m := range late.msgs {
		fmt.Fprintln(os.Stderr, "FAIL (reported after its test ended):", m)
		code = max(code, 1)
	}
	return code
}

// Recorded has the moto_server that the code under t starts record every
// request (MOTO_ENABLE_RECORDING, into a file of t's), for CheckRecorded:
// call it before the server starts.
func Recorded(t *testing.T) {
	t.Helper()
	t.Setenv("MOTO_ENABLE_RECORDING", "1")
	t.Setenv("MOTO_RECORDER_FILEPATH", t.TempDir()+"/moto_recording")
}

// CheckRecorded checks the recorded calls of p's functions at the
// moto_server at motoURL (Recorded): a denied one fails t. It fails t
// when no function call was recorded at all.
func CheckRecorded(t *testing.T, p *Policies, motoURL string) {
	t.Helper()
	n, err := CheckRecording(t.Context(), p, motoURL, Names{}, func(msg string) { t.Errorf("%s", msg) })
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("iamcheck: moto at %s recorded no call of a function (are they run with AWS_SDK_UA_APP_ID?)", motoURL)
	}
	t.Logf("iamcheck: %d recorded calls of the functions checked", n)
}
