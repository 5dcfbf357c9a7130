package gcs_test

import (
	"crypto/rand"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
	"github.com/daybook-dev/daybook/shared/upload"
)

var srv *serverproc.Process

func TestMain(m *testing.M) { os.Exit(servertest.Around(m.Run, &srv, gcsserver.Start)) }

// recorder records each request's method and URL, and the status answered.
type recorder struct {
	base   http.RoundTripper
	opened chan struct{} // closed once a resumable session opened
	once   sync.Once
	mu     sync.Mutex
	seen   []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	status := "error"
	if err == nil {
		status = resp.Status
		if loc := resp.Header.Get("Location"); loc != "" {
			status += " Location " + loc
			defer r.once.Do(func() { close(r.opened) })
		}
	}
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.String()+" -> "+status)
	r.mu.Unlock()
	return resp, err
}

// TestAbortCancelsTheSession: a Writer that fails after its resumable
// session opened cancels the session: a DELETE of the URI GCS gave, which
// GCS answers 499.
func TestAbortCancelsTheSession(t *testing.T) {
	rec := &recorder{base: http.DefaultTransport, opened: make(chan struct{})}
	c, err := gcs.NewClient(t.Context(), gcs.Config{Endpoint: gcsserver.Endpoint(srv), Transport: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := buckettest.GCSCreateBucket(t.Context(), srv, "abort"); err != nil {
		t.Fatal(err)
	}
	b := gcs.New(c, "abort", gcs.Options{})
	w := b.NewWriter(t.Context(), "k", upload.Options{PartSize: upload.MinPartSize})
	data := make([]byte, 2*upload.MinPartSize+1)
	rand.Read(data)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	select { // the session is open once the first part is sent
	case <-rec.opened:
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	if err := w.Abort(t.Context()); err != nil {
		t.Fatal(err)
	}
	var session string
	for _, s := range rec.seen {
		if _, loc, ok := strings.Cut(s, " Location "); ok && strings.HasPrefix(s, "POST ") {
			session = loc
		}
	}
	if session == "" {
		t.Fatalf("no resumable session opened: %q", rec.seen)
	}
	if last := rec.seen[len(rec.seen)-1]; last != "DELETE "+session+" -> 499 status code 499" {
		t.Errorf("last request %q, want the session's DELETE answered 499", last)
	}
	if _, err := c.Attrs(t.Context(), "abort", "k"); err == nil {
		t.Error("the aborted object is visible")
	}
}
