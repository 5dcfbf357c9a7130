// Package cichecks has no code: its tests check the Makefile and the .ci
// scripts a fresh machine runs (tool installation and version pins, the
// build targets sam build calls), and that the shipped binaries (the
// operator's CLI, the Lambda functions) link no development tooling.
package cichecks
