package upload

import "syscall"

// newPartBuffer maps size bytes of anonymous memory outside the Go heap
// (see the comment on part buffers in buffers.go); if the kernel refuses,
// the buffer is Go memory.
func newPartBuffer(size int64) *partBuffer {
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return &partBuffer{b: make([]byte, size)}
	}
	return &partBuffer{b: b, mapped: true}
}

// releasePages gives the pages of a mapped buffer back to the OS; the
// mapping stays, and reads as zeros until written again.
func releasePages(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED) // on failure the pages just stay resident
}
