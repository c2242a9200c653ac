package inspect

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/export"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// trtCarrier returns a small program written by package export: method
// "forward" with one TensorRT delegate whose blob (TR02, aliased I/O) is
// in segment 0, and target_device cuda:0. Tests that need a TensorRT
// program build it here instead of depending on a named shared vector.
func trtCarrier(t testing.TB) []byte {
	t.Helper()
	f32 := func(name string) *export.Tensor {
		return &export.Tensor{Name: name, DType: export.Float32, Shape: []int64{1, 4}}
	}
	engine := strings.Repeat("E", 32)
	m := &export.Method{
		Name:    "forward",
		Inputs:  []*export.Tensor{f32("tok"), f32("k")},
		Outputs: []*export.Tensor{{Name: "logits"}, {Name: "k_out"}},
		Calls: []*export.EngineCall{{
			Engine: export.EngineReader(strings.NewReader(engine), int64(len(engine))),
			Inputs: []*export.Binding{{Name: "tok", Tensor: "tok"}, {Name: "k", Tensor: "k"}},
			Outputs: []*export.Binding{
				{Name: "logits", Tensor: "logits", DType: export.Float32, Shape: []int64{1, 4}},
				{Name: "k_out", Tensor: "k_out", DType: export.Float32, Shape: []int64{1, 4}},
			},
			AliasedIO: []export.AliasedIO{{Output: "k_out", Input: "k", Kind: "kv_cache_update"}},
		}},
	}
	var b bytes.Buffer
	_, err := export.Write(&b, &export.Program{Methods: []*export.Method{m}}, &export.Options{SegmentAlignment: 16, TargetDevice: "cuda:0"})
	require.NoError(t, err)
	return b.Bytes()
}

// genPrograms returns the small TensorRT programs of package testprog by
// name, for tests that need a program of some shape (they used to take
// named shared vectors, which a holdout tree may not have), plus
// "aliased" = trtCarrier and "two_engines" = testprog's "chain".
func genPrograms(t testing.TB) map[string][]byte {
	t.Helper()
	genOnce.Do(func() {
		genCache = map[string][]byte{}
		for name, data := range testprog.Programs(t) {
			genCache[name] = data
		}
		genCache["aliased"] = trtCarrier(t)
		genCache["two_engines"] = genCache["chain"]
	})
	return genCache
}

var (
	genOnce  sync.Once
	genCache map[string][]byte
)

// openSource opens a test program: "corpus/NAME.pte" from the shared
// corpus, any other name from genPrograms.
func openSource(t testing.TB, src string) *pte.File {
	t.Helper()
	if strings.HasPrefix(src, "corpus/") {
		return openShared(t, src)
	}
	data, ok := genPrograms(t)[src]
	require.True(t, ok, "no generated program %q", src)
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	return f
}

// rewriteBytes opens the program file data, lets edit change its Program
// and segments and returns the program written again.
func rewriteBytes(t testing.TB, data []byte, edit func(p *pte.Program, segs []*io.SectionReader)) []byte {
	t.Helper()
	src, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	defer src.Close()
	segs, err := src.SegmentReaders()
	require.NoError(t, err)
	edit(src.Program, segs)
	var out bytes.Buffer
	_, err = pte.Write(&out, src.Program, segs, nil)
	require.NoError(t, err)
	return out.Bytes()
}

// rewriteProgram is rewriteBytes, opened.
func rewriteProgram(t testing.TB, data []byte, edit func(p *pte.Program, segs []*io.SectionReader)) *pte.File {
	t.Helper()
	out := rewriteBytes(t, data, edit)
	f, err := pte.NewFile(bytes.NewReader(out), int64(len(out)))
	require.NoError(t, err)
	return f
}
