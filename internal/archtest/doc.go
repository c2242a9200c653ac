// Package archtest holds no code: its test checks that the module's imports
// follow the one direction docs/architecture.md draws.
package archtest
