// Package gcsserver starts and stops fake-gcs-server (the Go module
// github.com/fsouza/fake-gcs-server, built by `make tools` with go install
// at the version the Makefile pins) on 127.0.0.1 for tests: Google Cloud
// Storage's JSON API, in memory, over plain HTTP, with no authentication.
// Buckets are created by the test.
package gcsserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// InstallHint is part of the error whenever the binary cannot be found.
const InstallHint = "fake-gcs-server not found: run `make tools` (it installs the version the Makefile pins with go install into $(go env GOPATH)/bin), or set FAKE_GCS_SERVER to a fake-gcs-server binary"

// Bin returns the fake-gcs-server executable: $FAKE_GCS_SERVER, $GOBIN or
// $GOPATH/bin, then PATH.
func Bin() (string, error) {
	return serverproc.GoBin("fake-gcs-server", "FAKE_GCS_SERVER", InstallHint)
}

// Start runs fake-gcs-server on a free loopback port, its log under dir,
// and returns once it lists buckets. Its endpoint for a client is
// Endpoint(p).
func Start(ctx context.Context, dir string) (*serverproc.Process, error) {
	return StartBehind(ctx, dir, "")
}

// StartBehind is Start for a server its clients reach through a proxy at
// external (http://host:port): the Location of a resumable upload session
// points at the proxy, so the session's requests go through it too. ""
// is the server itself.
func StartBehind(ctx context.Context, dir, external string) (*serverproc.Process, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	return serverproc.Start(ctx, serverproc.Spec{
		Name: "fake-gcs-server",
		Path: bin,
		Args: func(port int) []string {
			addr := "127.0.0.1:" + strconv.Itoa(port)
			ext := external
			if ext == "" {
				ext = "http://" + addr
			}
			// -public-host and -external-url: the Location of a resumable
			// upload session points back at this server (or its proxy).
			return []string{"-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port), "-backend", "memory",
				"-public-host", addr, "-external-url", ext, "-log-level", "warn"}
		},
		Env:   []string{"HOME=" + dir, "TMPDIR=" + dir},
		Dir:   dir,
		Ready: serverproc.OKAt("/storage/v1/b?project=test"), // it lists buckets
	})
}

// Endpoint is the JSON API's base URL on p, for gcs.Config (a
// destination's endpoint is p.URL).
func Endpoint(p *serverproc.Process) string { return p.URL + "/storage/v1/" }

// CreateBucket creates a bucket on p (in project "test").
func CreateBucket(ctx context.Context, p *serverproc.Process, name string) error {
	body, _ := json.Marshal(map[string]string{"name": name})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, Endpoint(p)+"b?project=test", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("create bucket %s: %s", name, resp.Status)
	}
	return nil
}
