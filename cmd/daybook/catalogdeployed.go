package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// deployedSchemas reads what the deployment recorded as delivered: one
// schema document per dataset and contract in its ledger table, written by
// the exporter after a commit that delivered it.
func (a *app) deployedSchemas(c *cobra.Command) ([]dataset.Dataset, error) {
	e, err := a.open(c.Context())
	if err != nil {
		return nil, err
	}
	recs, err := e.ledger.Schemas().DeliveredSchemas(c.Context())
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("the deployment has recorded no delivered schema yet (nothing committed since it records them); compare with a bucket's _schemas/ instead")
	}
	out := make([]dataset.Dataset, 0, len(recs))
	for _, r := range recs {
		d, err := bucketdocs.Delivered(r.Doc)
		if err != nil {
			return nil, fmt.Errorf("the recorded schema of %s at %s: %w", r.Dataset, r.Contract, err)
		}
		out = append(out, d)
	}
	return out, nil
}
