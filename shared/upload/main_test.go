package upload

import (
	"os"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(motoserver.RunTests(m, &srv)) }
