package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/pte"
	"github.com/ptekit/ptekit/pte/ptejson"
)

// parseTarget reads PLAN:DELEGATE, PLAN being a method index or name.
func parseTarget(p *pte.Program, s string) (plan, del int, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return 0, 0, fmt.Errorf("--extract %q: want PLAN:DELEGATE, e.g. forward:0 or 0:0", s)
	}
	ps, ds := s[:i], s[i+1:]
	del, err = strconv.Atoi(ds)
	if err != nil || del < 0 {
		return 0, 0, fmt.Errorf("--extract %q: delegate %q is not an index", s, ds)
	}
	plan = -1
	for pi, ep := range p.ExecutionPlan {
		if ep != nil && ep.Name == ps {
			plan = pi
			break
		}
	}
	if plan < 0 {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 0 || n >= len(p.ExecutionPlan) {
			return 0, 0, fmt.Errorf("--extract %q: no method %q (methods: %s)", s, ps, joinOr(methodList(p)))
		}
		plan = n
	}
	if del >= len(p.ExecutionPlan[plan].Delegates) {
		return 0, 0, fmt.Errorf("--extract %q: method %q has %d delegate(s)", s, p.ExecutionPlan[plan].Name, len(p.ExecutionPlan[plan].Delegates))
	}
	return plan, del, nil
}

func methodList(p *pte.Program) []string {
	var out []string
	for i, ep := range p.ExecutionPlan {
		if ep != nil {
			out = append(out, fmt.Sprintf("%d=%s", i, ep.Name))
		}
	}
	return out
}

// runExtract streams a delegate payload, or the TensorRT engine inside it,
// to a file (through a temporary file renamed into place) or to stdout.
func runExtract(f *pte.File, name string, stdout, stderr io.Writer, o *options) int {
	plan, del, err := parseTarget(f.Program, o.extract)
	if err != nil {
		return usageErr(stderr, "%v", err)
	}
	if o.output != "-" {
		if err := checkOutput(name, o.output, o.force); err != nil {
			return usageErr(stderr, "%v", err)
		}
	}
	pl, err := f.DelegateData(plan, del)
	if err != nil {
		return failErr(stderr, name, err)
	}
	var src *io.SectionReader = pl.SectionReader
	what := fmt.Sprintf("payload of %s delegate %d", f.Program.ExecutionPlan[plan].Name, del)
	if o.engine {
		id := f.Program.ExecutionPlan[plan].Delegates[del].ID
		if !ptejson.IsTensorRT(id) {
			return failErr(stderr, name, fmt.Errorf("--engine: delegate %s:%d is %s, not %s", esc(f.Program.ExecutionPlan[plan].Name), del, esc(id), delegate.BackendID))
		}
		blob, err := delegate.Decode(pl, pl.Size())
		if err != nil {
			return failErr(stderr, name, fmt.Errorf("%s: %w", what, err))
		}
		src = blob.Engine()
		what = "TensorRT engine in the " + what
	}
	if o.output == "-" {
		if _, err := io.Copy(stdout, src); err != nil {
			return failErr(stderr, name, fmt.Errorf("writing %s: %w", what, err))
		}
		return exitOK
	}
	n, err := writeFileAtomic(o.output, src)
	if err != nil {
		return failErr(stderr, name, err)
	}
	fmt.Fprintf(stdout, "wrote %d bytes (%s) to %s\n", n, what, o.output)
	return exitOK
}

// checkOutput refuses an output path that names the input file (always:
// the payload would replace the program it is read from) or an existing
// file (unless force).
func checkOutput(input, output string, force bool) error {
	out, err := os.Stat(output)
	if err != nil {
		return nil // missing (or unreadable: writing will say why)
	}
	if input != "-" {
		if in, err := os.Stat(input); err == nil && os.SameFile(in, out) {
			return fmt.Errorf("-o %s is the input file; write the payload elsewhere", esc(output))
		}
	}
	if !force {
		return fmt.Errorf("-o %s exists; pass --force to replace it", esc(output))
	}
	return nil
}

// writeFileAtomic copies r to path through a temporary file in the same
// directory, renamed into place; on failure no file is left behind.
func writeFileAtomic(path string, r io.Reader) (int64, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(tmp, r)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	return n, nil
}
