// Package cli holds what ptekit's commands share about talking to people:
// flag help without pflag's "[=true|false]" noise on boolean flags, the
// --version line from the binary's build information, the one-line
// form of an error and the escaping of what it quotes (EscText); and, for
// a command that runs as one batch, the collector setting (TuneBatchGC,
// which also records the opt-in in internal/batch) and a heap advised to
// use huge pages (ReadyHeap).
package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/ptekit/ptekit/internal/batch"
)

// FlagUsages formats fs's flags for --help, one per line: "-o, --output
// FILE  text". A boolean flag shows no value (pflag's own formatter writes
// "--json[=true|false]"); another flag shows the name given in backquotes
// in its usage, or its type. A default that is not the zero value follows
// the text.
func FlagUsages(fs *pflag.FlagSet) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		head := "      --" + f.Name
		if f.Shorthand != "" {
			head = "  -" + f.Shorthand + ", --" + f.Name
		}
		name, usage := pflag.UnquoteUsage(f)
		if f.Value.Type() != "bool" && name != "" {
			head += " " + name
		}
		if !slices.Contains([]string{"", "false", "0", "0s", "[]"}, f.DefValue) {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "%s\t%s\n", head, usage)
	})
	tw.Flush()
	return b.String()
}

// PrintVersion writes the --version line of command cmd to w: the module
// version and the VCS revision the binary was built from, as the Go
// toolchain recorded them ("pteinspect github.com/ptekit/ptekit v1.2.0
// (revision 0123abcd, 2026-12-03T08:00:00Z)"); "(devel)" and "revision
// unknown" when the build recorded none (go run, -buildvcs=false).
func PrintVersion(w io.Writer, cmd string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w, cmd+" (no build information)")
		return
	}
	fmt.Fprintln(w, versionLine(cmd, info))
}

func versionLine(cmd string, info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	vcs := "revision unknown"
	if rev != "" {
		vcs = "revision " + rev[:min(len(rev), 12)]
		if when != "" {
			vcs += ", " + when
		}
		if modified {
			vcs += ", modified"
		}
	}
	path := info.Main.Path
	if path == "" {
		path = info.Path
	}
	return fmt.Sprintf("%s %s %s (%s, %s)", cmd, path, version, vcs, info.GoVersion)
}

// packages are the names ptekit's packages put before their errors
// ("pte: ...", "export: rebake: ..."): the Go convention, but not the
// user's terms, so Message drops them.
var packages = []string{"export", "rebake", "pte", "ptd", "compilespec", "executor", "runtime", "inspect",
	"delegate", "httprange", "atomicfile", "fbverify"}

// Message is err as one line in the user's terms: without the Go package
// names of the library's error chain, and a missing file or directory
// said as such ("m.json does not exist", not "open m.json: no such file or
// directory").
func Message(err error) string {
	s := err.Error()
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		switch {
		case errors.Is(pe.Err, fs.ErrNotExist):
			s = strings.Replace(s, pe.Error(), pe.Path+" does not exist", 1)
		case errors.Is(pe.Err, fs.ErrPermission):
			s = strings.Replace(s, pe.Error(), pe.Path+": permission denied", 1)
		}
	}
	return Plain(s)
}

// Plain is a message as one line without the Go package names of an error
// chain ("export: rebake: a.pte: pte: short" is "a.pte: short").
func Plain(s string) string {
	parts := strings.Split(s, ": ")
	kept := parts[:0]
	for _, p := range parts {
		if !slices.Contains(packages, p) {
			kept = append(kept, p)
		}
	}
	return OneLine(strings.Join(kept, ": "))
}

// Count is "1 method", "2 methods".
func Count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// OneLine joins the lines of a message (errors.Join, wrapped text) into
// one line.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// BoolFlag reports whether args set the boolean flag --name (--name,
// --name=true or --name=1) before any "--", for what must be known before
// the flags are parsed, such as whether a parse error is reported as JSON.
func BoolFlag(args []string, name string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--" + name, "--" + name + "=true", "--" + name + "=1":
			return true
		}
	}
	return false
}

// BatchGCPercent is the collector's GOGC for a batch command (see
// TuneBatchGC).
const BatchGCPercent = 400

// TuneBatchGC sets the collector for a command whose heap grows until its
// work is done and then exits, as an export's does (the manifest's tree,
// then the program's model, then its encoding): with the default GOGC of
// 100 the collector marks the growing heap again each time it doubles,
// 11-14% of an export's wall time at 8192 to 65536 engines, for garbage
// the exit would free anyway. BatchGCPercent collects a quarter as often
// while the heap is small; once the live heap passes 2.5 MiB, each
// collection sets GOGC so that the heap grows by at most 10 MiB
// (batchGCHeadroom) and half of the live heap past 32 MiB (see
// batchGCPercent): at 65,536 engines, five times the live heap was most
// of an export's peak memory. A GOGC in the environment (lookup is
// os.LookupEnv) is the user's choice and is kept: TuneBatchGC then
// changes nothing and returns false. Either way it marks the process as a
// batch command's (internal/batch), which ReadyHeap and export need.
func TuneBatchGC(lookup func(string) (string, bool)) bool {
	batch.Set(true)
	if _, ok := lookup("GOGC"); ok {
		return false
	}
	debug.SetGCPercent(BatchGCPercent)
	if !batchGCOn.Swap(true) {
		followLiveHeap()
	}
	return true
}
