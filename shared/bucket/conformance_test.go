package bucket_test

import (
	"os"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

// TestConformance runs the one suite on both stores a Bucket meets in tests.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend func(*testing.T) buckettest.Backend
	}{
		{"fake", buckettest.FakeBackend},
		{"moto", buckettest.MotoBackend(&srv)},
	} {
		t.Run(tc.name, func(t *testing.T) { buckettest.RunConformance(t, tc.backend) })
	}
}
