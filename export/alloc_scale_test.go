package export

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/internal/testkit"
)

// scaleManifest is a manifest of n engine calls in one of the shapes of
// scripts/bench's scale rows (internal/bench): methods (one method per
// engine), chain (one method calling the engines in turn), fanout (every
// engine reads the method input, the last one's output is the method's),
// outputs (every engine reads the input and produces a method output) and
// shared (n/2 methods of two calls, method i calling engines i and i+1 of
// n/2). Engine k is the file "eK.engine".
func scaleManifest(shape string, n int) []byte {
	var b strings.Builder
	call := func(k int, in, out string) string {
		return fmt.Sprintf(`{"engine":"e%d.engine","inputs":[{"binding":"x","tensor":%q}],"outputs":[{"binding":"y","tensor":%q,"dtype":"float16","shape":[1,4096]}]}`, k, in, out)
	}
	method := func(name, input string, outputs []string, calls []string) {
		if b.Len() > len(`{"methods":[`) {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":%q,"inputs":[{"name":%q,"dtype":"float16","shape":[1,4096]}],"outputs":[`, name, input)
		for i, o := range outputs {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q", o)
		}
		b.WriteString(`],"engines":[` + strings.Join(calls, ",") + "]}")
	}
	b.WriteString(`{"methods":[`)
	var calls, outs []string
	switch shape {
	case "methods":
		for k := range n {
			method(fmt.Sprintf("m%d", k), "x", []string{"y"}, []string{call(k, "x", "y")})
		}
	case "chain":
		for k := range n {
			calls = append(calls, call(k, fmt.Sprintf("t%d", k), fmt.Sprintf("t%d", k+1)))
		}
		method("forward", "t0", []string{fmt.Sprintf("t%d", n)}, calls)
	case "fanout", "outputs":
		for k := range n {
			calls = append(calls, call(k, "x", fmt.Sprintf("y%d", k)))
			if shape == "outputs" || k == n-1 {
				outs = append(outs, fmt.Sprintf("y%d", k))
			}
		}
		method("forward", "x", outs, calls)
	case "shared":
		for k := range n / 2 {
			method(fmt.Sprintf("m%d", k), "x", []string{"y"}, []string{call(k, "x", "h"), call((k+1)%(n/2), "h", "y")})
		}
	default:
		panic(shape)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// TestExportMemoryPerEngine bounds, per engine call, in each shape of the
// scale rows at 10,000 calls of 1 KiB engine files (as scripts/bench's):
//   - the bytes allocated to read the manifest and build its program
//     (everything but encoding and writing it): what the collector has to
//     clear, and for the most part what is live at the build's peak (the
//     manifest's parse tree, the program read from it, the resolved
//     methods, the plan's tables);
//   - the bytes the built program holds for the write (the live heap
//     after the build, the manifest let go of, less before the manifest
//     was read): the model to encode, each blob's prefix and source.
//     Holding the engines' bytes again would add 1 KiB per call.
//
// The bounds are about 10% above what was measured when they were set.
// Allocated (retained) bytes per call then: methods 4,357 (1,080), chain
// 2,715 (501), fanout 2,708 (509), outputs 3,069 (563), shared 3,509
// (776). Before a call's blob prefix was kept for the next call of the
// same metadata, manifest paths were made only for errors and the plans'
// and delegates' tables were cut from shared blocks: methods 5,698
// (1,353), chain 4,033 (790), fanout 4,019 (798), outputs 4,414 (852),
// shared 4,835 (925). Before a small engine's blob prefix was made alone
// (delegate.EncodeOptions.Prefix) and its bytes kept in a spool: methods
// 6,244 (1,309), chain 4,578 (746), fanout 4,549 (754), outputs 4,949
// (808), shared 5,357 (889). Before the memory work of issue 24's part 1 (`703c4e8`: engines
// held in memory, the tree's scalars as strings, delegate.NewBlobReader's
// readers) they were methods 7,578 (2,475), chain 5,719 (1,913), fanout
// 5,705 (1,917), outputs 6,110 (1,971), shared 6,096 (1,467), past every
// bound.
func TestExportMemoryPerEngine(t *testing.T) {
	const n = 10000
	type bound struct{ allocated, retained uint64 }
	bounds := map[string]bound{
		"methods": {4800, 1200},
		"chain":   {3000, 560},
		"fanout":  {3000, 560},
		"outputs": {3400, 620},
		"shared":  {3900, 860},
	}
	dir := t.TempDir()
	engine := make([]byte, 1024)
	for k := range n {
		for i := range engine {
			engine[i] = byte(i*7 + k)
		}
		binary.LittleEndian.PutUint64(engine, uint64(k)) // each engine its own bytes
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("e%d.engine", k)), engine, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for shape, bound := range bounds {
		t.Run(shape, func(t *testing.T) {
			live := func() uint64 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			data := scaleManifest(shape, n)
			before := live()
			var m *Manifest
			var err error
			parse := testkit.Allocated(func() { m, err = ParseManifest(data, dir) })
			data = nil
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			for _, meth := range m.Program.Methods {
				calls += len(meth.Calls)
			}
			p, opts := m.Program, m.Options
			m = nil
			var b *built
			buildBytes := testkit.Allocated(func() { b, err = build(p, &opts) })
			if err != nil {
				t.Fatal(err)
			}
			p = nil
			after := live()
			b.close()
			per := (parse + buildBytes) / uint64(calls)
			retained := uint64(0)
			if after > before {
				retained = (after - before) / uint64(calls)
			}
			t.Logf("%s: %d calls, %d B per call allocated (manifest %d, build %d), %d B per call retained for the write", shape, calls, per, parse/uint64(calls), buildBytes/uint64(calls), retained)
			if per > bound.allocated {
				t.Errorf("%s: %d bytes allocated per engine call, more than the bound of %d", shape, per, bound.allocated)
			}
			// Elsewhere than Linux small engine files are held (readSmallEngine).
			if runtime.GOOS == "linux" && retained > bound.retained {
				t.Errorf("%s: %d bytes per engine call held for the write, more than the bound of %d", shape, retained, bound.retained)
			}
			runtime.KeepAlive(b)
		})
	}
}
