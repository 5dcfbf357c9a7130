// Package azurite starts and stops Azurite's blob service (npm `azurite`,
// pinned by js/package-lock.json and installed by `make tools` with npm ci)
// on 127.0.0.1 for tests: Azure Blob Storage's REST API in memory, with the
// emulator's well-known development account. Containers are created by the
// test.
package azurite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// InstallHint is part of the error whenever Azurite cannot be found.
const InstallHint = "azurite is not installed: run `make tools` (npm ci in shared/devkit/azurite/js), or set AZURITE to its dist/src/blob/main.js"

// The emulator's development account (azure.EmulatorAccount and
// EmulatorKey).
const (
	Account = azure.EmulatorAccount
	Key     = azure.EmulatorKey
)

// Bin returns Azurite's blob service entry point: $AZURITE, or
// js/node_modules/azurite/dist/src/blob/main.js beside this package's
// source (go test, go run), or in the checkout that holds the working
// directory (a binary built with -trimpath, as make builds daybook-dev,
// knows its source only by module path).
func Bin() (string, error) {
	if p := os.Getenv("AZURITE"); p != "" {
		return p, nil
	}
	_, file, _, _ := runtime.Caller(0)
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%s (%w)", InstallHint, err)
	}
	if p, ok := locate(file, wd); ok {
		return p, nil
	}
	return "", errors.New(InstallHint)
}

// entry is main.js's path in this package's folder.
var entry = filepath.Join("js", "node_modules", "azurite", "dist", "src", "blob", "main.js")

// locate finds entry beside source, then in the package's folder of a
// checkout at dir or at one of its parents.
func locate(source, dir string) (string, bool) {
	if p := filepath.Join(filepath.Dir(source), entry); isFile(p) {
		return p, true
	}
	for d := dir; ; d = filepath.Dir(d) {
		if p := filepath.Join(d, "shared", "devkit", "azurite", entry); isFile(p) {
			return p, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Start runs Azurite's blob service with node on a free loopback port, in
// memory, accepting any API version the SDK sends, with its telemetry off
// (it reaches no network), its log under dir, and
// returns once it answers HTTP. Its endpoint for a client is Endpoint(p).
func Start(ctx context.Context, dir string) (*serverproc.Process, error) {
	main, err := Bin()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node not found: Azurite needs Node.js 20+ (`apt-get install nodejs npm`)")
	}
	return serverproc.Start(ctx, serverproc.Spec{
		Name: "azurite",
		Path: node,
		Args: func(port int) []string {
			return []string{main, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
				"--inMemoryPersistence", "--skipApiVersionCheck", "--silent",
				"--disableTelemetry"} // it would send usage data to Application Insights
		},
		Env: []string{"HOME=" + dir, "TMPDIR=" + dir, "PATH=" + os.Getenv("PATH")},
		Dir: dir,
	})
}

// Endpoint is the blob service URL of the development account on p
// (path-style, as Azurite serves it), for azure.Config (a destination's
// endpoint is p.URL, its storage account Account).
func Endpoint(p *serverproc.Process) string { return p.URL + "/" + Account }

// CreateContainer creates a container in the development account on p.
func CreateContainer(ctx context.Context, p *serverproc.Process, name string) error {
	key, err := container.NewSharedKeyCredential(Account, Key)
	if err != nil {
		return err
	}
	c, err := azure.NewContainerClient(azure.Config{ServiceURL: Endpoint(p), Container: name, Auth: azure.Auth{SharedKey: key}})
	if err != nil {
		return err
	}
	_, err = c.Create(ctx, nil)
	return err
}
