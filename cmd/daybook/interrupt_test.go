package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
)

// TestInterruptExits130: the daybook binary interrupted (Ctrl-C, SIGINT)
// while a command waits on the deployment stops that call, says
// "interrupted" and exits 130, as the operating guide's table of exit
// codes says. The deployment is an endpoint that takes the request and
// never answers; the interrupt is sent once it holds the request.
func TestInterruptExits130(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	hostbuild.Command(t, bin, "daybook")
	held, end := make(chan struct{}, 1), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case held <- struct{}{}:
		default:
		}
		select { // until the client goes away, or the test ends
		case <-r.Context().Done():
		case <-end:
		}
	}))
	defer hang.Close()
	defer close(end)
	vars := motoEnv(hang.URL)
	vars["LEDGER_TABLE"], vars["DAYBOOK_STAGE"] = "daybook-hang-ledger", "hang"
	b, _ := json.Marshal(map[string]map[string]string{"ExporterFunction": vars})
	envFile := filepath.Join(t.TempDir(), "env.json")
	if err := os.WriteFile(envFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bin, "daybook"), "status", "--env-file", envFile)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("daybook status ended before it reached the deployment: %v\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("daybook status never reached the deployment")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("daybook status did not stop on the interrupt\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != cli.ExitInterrupted || !strings.Contains(stderr.String(), "daybook: interrupted") {
		t.Errorf("interrupted daybook status: %v, want exit %d and 'daybook: interrupted'\n%s", err, cli.ExitInterrupted, stderr.String())
	}
}
