package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// demoStores are the demo's Google Cloud Storage and Azure Blob Storage:
// fake-gcs-server and Azurite on loopback, which the exporter under the
// runtime emulator writes to as to any custom endpoint.
type demoStores struct {
	gcs, azure *serverproc.Process
}

// startStores starts both emulators, their logs in dir.
func startStores(ctx context.Context, dir string) (*demoStores, error) {
	g, err := gcsserver.Start(ctx, dir)
	if err != nil {
		return nil, err
	}
	a, err := azurite.Start(ctx, dir)
	if err != nil {
		_ = g.Stop()
		return nil, err
	}
	return &demoStores{gcs: g, azure: a}, nil
}

func (s *demoStores) stop() {
	_ = s.gcs.Stop()
	_ = s.azure.Stop()
}

// point sets the GCS and Azure accounts' endpoints to the emulators.
func (s *demoStores) point(accts []account.Account) {
	for i := range accts {
		switch accts[i].Destination.Kind() {
		case account.StoreGCS:
			accts[i].Destination.Endpoint = s.gcs.URL
		case account.StoreAzure:
			accts[i].Destination.Endpoint = s.azure.URL
		}
	}
}

// create creates d's bucket (or container) on its store.
func (s *demoStores) create(ctx context.Context, s3c *s3.Client, d account.Destination) error {
	var err error
	switch d.Kind() {
	case account.StoreGCS:
		err = gcsserver.CreateBucket(ctx, s.gcs, d.Bucket)
	case account.StoreAzure:
		err = azurite.CreateContainer(ctx, s.azure, d.Bucket)
	default:
		_, err = s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(d.Bucket)})
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", d.URI(""), err)
	}
	return nil
}

// mirrorName is the folder under .demo/buckets a destination's bucket is
// mirrored to: the S3 bucket's name, or <store>-<bucket>.
func mirrorName(d account.Destination) string {
	if d.Kind() == account.StoreS3 {
		return d.Bucket
	}
	return string(d.Kind()) + "-" + d.Bucket
}

// The pid files of the emulators a kept demo leaves running, beside
// moto's.
func (d localDir) storePidFiles() []string {
	return []string{filepath.Join(string(d), "fake-gcs-server.pid"), filepath.Join(string(d), "azurite.pid")}
}

// keep writes the emulators' pid files, for local down.
func (s *demoStores) keep(d localDir) error {
	for i, p := range []*serverproc.Process{s.gcs, s.azure} {
		if err := os.WriteFile(d.storePidFiles()[i], []byte(strconv.Itoa(p.Pid)+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// stopKeptStores stops the emulators a kept demo left running in d.
func stopKeptStores(d localDir) ([]int, error) {
	var stopped []int
	for _, f := range d.storePidFiles() {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return stopped, err
		}
		pid, err := strconv.Atoi(string(b[:len(b)-1]))
		if err != nil || pid <= 0 {
			return stopped, fmt.Errorf("pid file %s: %q", f, b)
		}
		if err := serverproc.StopPid(pid); err != nil {
			return stopped, err
		}
		_ = os.Remove(f)
		stopped = append(stopped, pid)
	}
	return stopped, nil
}
