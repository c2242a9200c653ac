package testprog

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Mkprog is the mkprog command of the script tests (testdata/script/*.txtar
// of the commands): it writes the programs of Build to files, so that a
// script names the shape of program it needs and never a shared file.
//
//	mkprog NAME FILE           write program NAME ("segment", "engines_64", ...)
//	mkprog -cut N NAME FILE    only its first N bytes (N < 0: all but the last -N)
//	mkprog -list               print the names
//
// It returns the exit status.
func Mkprog(args []string, stdout, stderr io.Writer) int {
	progs, err := Build()
	if err != nil {
		fmt.Fprintf(stderr, "mkprog: %v\n", err)
		return 1
	}
	if len(args) == 1 && args[0] == "-list" {
		fmt.Fprintln(stdout, strings.Join(slices.Sorted(maps.Keys(progs)), "\n"))
		return 0
	}
	cut, haveCut := 0, false
	if len(args) > 1 && args[0] == "-cut" {
		if cut, err = strconv.Atoi(args[1]); err != nil {
			fmt.Fprintf(stderr, "mkprog: -cut %q: %v\n", args[1], err)
			return 2
		}
		haveCut, args = true, args[2:]
	}
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: mkprog [-cut N] NAME FILE | mkprog -list")
		return 2
	}
	data, ok := progs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mkprog: no program %q (mkprog -list)\n", args[0])
		return 2
	}
	if haveCut {
		if cut < 0 {
			cut += len(data)
		}
		data = data[:max(0, min(cut, len(data)))]
	}
	if err := os.WriteFile(args[1], data, 0o666); err != nil {
		fmt.Fprintf(stderr, "mkprog: %v\n", err)
		return 1
	}
	return 0
}
