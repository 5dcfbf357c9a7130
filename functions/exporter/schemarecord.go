package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"

	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// SchemaLedger records the schema each dataset was delivered with, per
// contract (ledger.DeliveredSchema), for daybook catalog diff --deployed
// and the exporter's own check (delivered.go), and says whether a dataset
// was ever delivered to an account.
type SchemaLedger interface {
	DeliveredSchemaOf(ctx context.Context, ds, contract string) (ledger.DeliveredSchema, error)
	RecordSchema(ctx context.Context, s ledger.DeliveredSchema) (bool, error)
	// EverCommitted reports whether a generation of the account's dataset
	// (a ledger name) was ever committed (ledger.EverCommitted).
	EverCommitted(ctx context.Context, accountID, dataset string) (bool, error)
}

var _ SchemaLedger = schemaLedger{}

// schemasSeen remembers, per dataset and contract, the SHA-256 of the
// schema document this function last found or wrote in the ledger ("" for
// none recorded). Safe for concurrent use; the zero value is empty, and a
// nil one remembers nothing.
type schemasSeen struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *schemasSeen) has(key, sum string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key] == sum
}

// get is the SHA-256 last seen recorded for key; ok is false when none
// was seen.
func (s *schemasSeen) get(key string) (sum string, ok bool) {
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sum, ok = s.m[key]
	return sum, ok
}

func (s *schemasSeen) note(key, sum string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[key] = sum
}

// recordSchema records the committed dataset's schema document in the
// ledger when it differs from the recorded one. A warm function costs
// nothing once it has seen the document; its first commit of a dataset
// reads the item once (or uses what checkDelivered read before it), and
// writes it only when the schema changed. Like the bucket documents, a
// failure is logged and the next commit retries.
func (e *Exporter) recordSchema(ctx context.Context, ds dataset.Dataset, log *slog.Logger) {
	if e.Schemas == nil {
		return
	}
	doc, err := bucketdocs.Schema(ds)
	if err != nil {
		log.WarnContext(ctx, "delivered schema not recorded", "error", err.Error())
		return
	}
	h := sha256.Sum256(doc)
	sum, key := hex.EncodeToString(h[:]), ds.LedgerName()
	recorded, seen := e.schemas.get(key)
	if seen && recorded == sum {
		return
	}
	if !seen {
		rec, err := e.Schemas.DeliveredSchemaOf(ctx, ds.Name, ds.ContractVersion())
		switch {
		case err == nil && rec.SHA256 == sum:
			e.schemas.note(key, sum)
			return
		case err != nil && !errors.Is(err, ledger.ErrNotFound):
			log.WarnContext(ctx, "delivered schema not recorded; the next commit retries", "error", err.Error())
			return
		}
	}
	wrote, err := e.Schemas.RecordSchema(ctx, ledger.DeliveredSchema{Dataset: ds.Name, Contract: ds.ContractVersion(),
		Version: ds.Version, Doc: doc, SHA256: sum})
	if err != nil {
		log.WarnContext(ctx, "delivered schema not recorded; the next commit retries", "error", err.Error())
		return
	}
	e.schemas.note(key, sum)
	if wrote {
		log.InfoContext(ctx, "delivered schema recorded", "contract", ds.ContractVersion(), "schema_version", ds.Version)
	}
}
