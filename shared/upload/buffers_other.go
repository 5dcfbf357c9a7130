//go:build !linux

package upload

// newPartBuffer allocates size bytes of Go memory: off Linux, part buffers
// stay on the Go heap.
func newPartBuffer(size int64) *partBuffer { return &partBuffer{b: make([]byte, size)} }

// releasePages is never called for Go memory.
func releasePages([]byte) {}
