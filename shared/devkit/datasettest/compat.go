package datasettest

import "github.com/daybook-dev/daybook/shared/dataset"

// Compatible is dataset.Compatible, kept for the tests that call it here.
func Compatible(prev, next dataset.Dataset) error { return dataset.Compatible(prev, next) }
