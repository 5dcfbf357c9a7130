// Package cichecks has no code: its tests check the Makefile and the .ci
// scripts a fresh machine runs (tool installation and version pins, the
// build targets sam build calls).
package cichecks
