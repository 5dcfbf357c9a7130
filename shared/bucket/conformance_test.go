package bucket_test

import (
	"os"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/minioserver"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
)

var (
	srv  *motoserver.Server
	mio  *minioserver.Server
	fgcs *serverproc.Process
	azr  *serverproc.Process
)

func TestMain(m *testing.M) {
	os.Exit(servertest.Around(func() int {
		return servertest.Around(func() int {
			return minioserver.Around(func() int { return mototest.RunTests(m, &srv) }, &mio)
		}, &azr, azurite.Start)
	}, &fgcs, gcsserver.Start))
}

// TestConformance runs the one suite on every store a Bucket meets in
// tests: the in-memory fake, moto (AWS's API, checksums unverified), MinIO
// (a real S3 implementation, which verifies them), fake-gcs-server (Google
// Cloud Storage's JSON API) and Azurite (Azure Blob Storage's emulator),
// and prints the table of cases and stores with every difference from S3
// a case named.
func TestConformance(t *testing.T) {
	var table buckettest.Table
	for _, tc := range []struct {
		name    string
		backend func(*testing.T) buckettest.Backend
	}{
		{"fake", buckettest.FakeBackend},
		{"moto", buckettest.MotoBackend(&srv)},
		{"minio", buckettest.MinIOBackend(&mio)},
		{"fake-gcs-server", buckettest.GCSBackend(&fgcs)},
		{"azurite", buckettest.AzuriteBackend(&azr)},
	} {
		t.Run(tc.name, func(t *testing.T) { buckettest.RunConformance(t, tc.name, &table, tc.backend) })
	}
	t.Logf("conformance table:\n%s", table.String())
}
