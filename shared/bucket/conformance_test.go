package bucket_test

import (
	"os"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/minioserver"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
)

var (
	srv *motoserver.Server
	mio *minioserver.Server
)

func TestMain(m *testing.M) {
	os.Exit(minioserver.Around(func() int { return mototest.RunTests(m, &srv) }, &mio))
}

// TestConformance runs the one suite on every store a Bucket meets in
// tests: the in-memory fake, moto (AWS's API, checksums unverified) and
// MinIO (a real S3 implementation, which verifies them).
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend func(*testing.T) buckettest.Backend
	}{
		{"fake", buckettest.FakeBackend},
		{"moto", buckettest.MotoBackend(&srv)},
		{"minio", buckettest.MinIOBackend(&mio)},
	} {
		t.Run(tc.name, func(t *testing.T) { buckettest.RunConformance(t, tc.backend) })
	}
}
