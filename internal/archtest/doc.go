// Package archtest holds no code. Its tests check that the module's imports
// follow the one direction docs/architecture.md draws, that the map's
// drawing and names agree with its table and the code, and that no
// library package starts a process behind its caller's back or makes a
// raw system call with a hand-kept trap number.
package archtest
