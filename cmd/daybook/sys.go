package main

import "syscall"

// syscallZero probes a pid without signalling it.
const syscallZero = syscall.Signal(0)
