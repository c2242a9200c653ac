package export

import (
	"bytes"
	"fmt"
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

// TestExportMemoryPerEngine bounds the bytes allocated per engine call to
// read a manifest of 10,000 calls and build its program (everything but
// encoding and writing it), in each shape of the scale rows. The bytes
// allocated are what the collector has to clear and, for the most part,
// what is live at the build's peak: the manifest's parse tree, the
// program read from it, the resolved methods and the plan's tables. Engine
// bytes are not counted (each call reads a 64-byte engine of its own from
// memory). The bounds are about 15% above what was allocated when they
// were set (4,505 to 6,377 bytes per call); before (`ffcc59f`: a tree of
// jsontree.Values, the methods planned so far all held) it was 5,996 to
// 9,550, past every bound.
func TestExportMemoryPerEngine(t *testing.T) {
	const n = 10000
	bounds := map[string]uint64{"methods": 7300, "chain": 5200, "fanout": 5200, "outputs": 5600, "shared": 6300}
	for shape, bound := range bounds {
		t.Run(shape, func(t *testing.T) {
			data := scaleManifest(shape, n)
			var m *Manifest
			var err error
			parse := testkit.Allocated(func() { m, err = ParseManifest(data, "") })
			if err != nil {
				t.Fatal(err)
			}
			engines := map[string]Source{}
			calls := 0
			for _, meth := range m.Program.Methods {
				for _, c := range meth.Calls {
					if _, ok := engines[c.Engine.Path]; !ok {
						e := bytes.Repeat([]byte(c.Engine.Path), 64)[:64]
						engines[c.Engine.Path] = EngineReader(bytes.NewReader(e), int64(len(e)))
					}
					c.Engine = engines[c.Engine.Path]
					calls++
				}
			}
			var b *built
			buildBytes := testkit.Allocated(func() { b, err = build(m.Program, &m.Options) })
			if err != nil {
				t.Fatal(err)
			}
			b.close()
			per := (parse + buildBytes) / uint64(calls)
			t.Logf("%s: %d calls, %d B per call allocated (manifest %d, build %d)", shape, calls, per, parse/uint64(calls), buildBytes/uint64(calls))
			if per > bound {
				t.Errorf("%s: %d bytes allocated per engine call, more than the bound of %d", shape, per, bound)
			}
		})
	}
}
