package main

import (
	"strconv"

	"github.com/daybook-dev/daybook/shared/upload"
)

// memoryReserve is what the Go runtime does not count besides the part
// buffers: the mapped binary, thread stacks, the C library.
const memoryReserve = 32 << 20

// memoryLimit returns the soft memory limit for the Go runtime
// (runtime/debug.SetMemoryLimit) of an exporter in a Lambda function of
// lambdaMiB MiB (AWS_LAMBDA_FUNCTION_MEMORY_SIZE), or 0 to leave the
// runtime's default: when GOMEMLIMIT is set (the operator's choice wins) or
// the size is unknown (not in Lambda).
//
// The limit is the function's memory less what the runtime does not count:
// the upload's part buffers, which live outside the Go heap on Linux
// (Concurrency+1 of partSize), and memoryReserve; never under half the
// memory. It is a guard, not what keeps the exporter small: an export peaks
// far below it (docs/performance.md), and only if something grew past it
// would the GC run harder instead of the function being killed for memory.
func memoryLimit(lambdaMiB, gomemlimit string, partSize int64, concurrency int) int64 {
	if gomemlimit != "" {
		return 0
	}
	mib, err := strconv.ParseInt(lambdaMiB, 10, 64)
	if err != nil || mib <= 0 {
		return 0
	}
	total := mib << 20
	if concurrency <= 0 {
		concurrency = upload.DefaultConcurrency
	}
	parts := int64(concurrency+1) * partSize
	return max(total-parts-memoryReserve, total/2)
}
