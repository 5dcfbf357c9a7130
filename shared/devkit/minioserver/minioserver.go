// Package minioserver starts and stops a MinIO server on 127.0.0.1 for
// integration tests: a real S3 implementation, which verifies the checksums
// a request carries where moto accepts them unchecked. Like motoserver it
// owns nothing else: buckets are created by the test.
//
// The server is a single drive in a directory of the caller's, with static
// root credentials and every outbound feature off (update check, call home,
// the web console), so it never reaches the network.
package minioserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// InstallHint is part of the error whenever the minio binary cannot be found.
const InstallHint = "minio not found: run `make tools` (it installs the MinIO server version pinned in the Makefile with go install into $(go env GOPATH)/bin), or set MINIO_SERVER to a minio binary"

// Region is the region the server says it is in.
const Region = "us-east-1"

// The root credentials of every server started here (test values).
const (
	AccessKey = "daybook-minio"
	SecretKey = "daybook-minio-secret"
)

// Server is one running MinIO server.
type Server struct {
	*serverproc.Process
}

// Bin returns the minio executable: $MINIO_SERVER, $GOBIN or $GOPATH/bin
// (where `make tools` installs it), then PATH.
func Bin() (string, error) {
	return serverproc.GoBin("minio", "MINIO_SERVER", InstallHint)
}

// Env is the server's whole environment: credentials, region, and every
// feature that would reach the network turned off. Nothing is inherited.
func Env(dir string) []string {
	return []string{
		"MINIO_ROOT_USER=" + AccessKey,
		"MINIO_ROOT_PASSWORD=" + SecretKey,
		"MINIO_REGION=" + Region,
		"MINIO_UPDATE=off",          // no update check against dl.min.io at start
		"MINIO_CALLHOME_ENABLE=off", // no diagnostics sent to SUBNET (off by default too)
		"MINIO_BROWSER=off",         // no embedded console listener
		"HOME=" + dir,
		"TMPDIR=" + dir,
	}
}

// Start launches MinIO on a free loopback port with its data, config and
// log under dir (the caller's temporary directory), and returns once its
// cluster health endpoint says it serves requests.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("minio data dir: %w", err)
	}
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Name: "minio",
		Path: bin,
		Args: func(port int) []string {
			return []string{"server", "--address", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				"--certs-dir", filepath.Join(dir, "certs"), data}
		},
		Env: Env(dir),
		Dir: dir,
		// The cluster health endpoint answers 200 once the object layer
		// is up (the liveness one answers before).
		Ready: serverproc.OKAt("/minio/health/cluster"),
	})
	if err != nil {
		return nil, err
	}
	return &Server{p}, nil
}

// Config returns an SDK configuration pointed at the server with its root
// credentials, as a user would set through AWS_ENDPOINT_URL.
func (s *Server) Config(ctx context.Context) (aws.Config, error) {
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		return aws.Config{}, err
	}
	cfg.Region = Region
	cfg.Credentials = credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")
	cfg.BaseEndpoint = aws.String(s.URL)
	return cfg, nil
}
