package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/ptd"
	"github.com/ptekit/ptekit/pte"
)

// sizePrograms are the programs of the --size goldens, all built here:
// the TensorRT programs of testprog and the other shapes of
// builtPrograms (no delegate, constants and named data, a segment two
// methods share, inline data, mutable data).
func sizePrograms(t *testing.T) map[string][]byte {
	progs := builtPrograms(t)
	for _, name := range []string{"engines_64", "two_methods", "inline"} {
		progs[name] = trtPrograms(t)[name]
	}
	return progs
}

// TestSizeGolden compares each --size view of built programs with
// testdata/golden/size_*.txt (-update rewrites them).
func TestSizeGolden(t *testing.T) {
	progs := sizePrograms(t)
	cases := []struct {
		golden, prog string
		args         []string
	}{
		{"size_engines_64", "engines_64", nil},
		{"size_kernel_only", "kernel_only", nil},
		{"size_other_backend", "other_backend", nil},
		{"size_methods_shared", "methods_shared", nil},
		{"size_training", "training", nil},
		{"size_long_other_backend", "other_backend", []string{"--long"}},
		{"size_long_methods_shared", "methods_shared", []string{"--long"}},
		{"size_long_inline", "inline", []string{"--long"}},
		{"size_json_other_backend", "other_backend", []string{"--json"}},
		{"size_json_methods_shared", "methods_shared", []string{"--json"}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			r := runArgs(progs[c.prog], append([]string{"--size", "-"}, c.args...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			require.Empty(t, r.stderr)
			testkit.Golden(t, filepath.Join("testdata", "golden", c.golden+".txt"), []byte(r.stdout))
		})
	}
	t.Run("size_html_methods_shared", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "report.html")
		r := runArgs(progs["methods_shared"], "--size", "-", "--html", out, "-q")
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Empty(t, r.stdout+r.stderr)
		page, err := os.ReadFile(out)
		require.NoError(t, err)
		testkit.Golden(t, filepath.Join("testdata", "golden", "size_html_methods_shared.html"), page)
	})
}

// TestSizeJSONSums: the --json form's items sum to the file size, every
// member is present, and a shared segment reports its saving.
func TestSizeJSONSums(t *testing.T) {
	for name, data := range sizePrograms(t) {
		r := runArgs(data, "--size", "--json", "-")
		require.Equal(t, exitOK, r.code, r.stderr)
		var doc struct {
			Kind       string           `json:"kind"`
			Size       int64            `json:"size"`
			Items      []map[string]any `json:"items"`
			Shared     []map[string]any `json:"shared"`
			DedupSaved int64            `json:"dedup_saved"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), name)
		require.Equal(t, "pte", doc.Kind)
		require.EqualValues(t, len(data), doc.Size, name)
		var sum int64
		for _, it := range doc.Items {
			for _, k := range []string{"part", "plan", "method", "backend", "delegate", "key", "segment", "size"} {
				require.Contains(t, it, k, name)
			}
			sum += int64(it["size"].(float64))
		}
		require.EqualValues(t, len(data), sum, name)
		require.NotNil(t, doc.Shared, name)
		if name == "methods_shared" {
			require.Len(t, doc.Shared, 1)
			require.Positive(t, doc.DedupSaved)
		}
	}
}

// TestSizeUsage: --html needs --size, and --size refuses what does not
// apply to it; --html never overwrites the input.
func TestSizeUsage(t *testing.T) {
	data := trtPrograms(t)["segment"]
	for _, args := range [][]string{
		{"--html", "x.html", "-"},
		{"--size", "--verify", "-"},
		{"--size", "--hash", "-"},
		{"--size", "--method", "forward", "-"},
		{"--size", "--json", "--long", "-"},
		{"--size", "--json", "--html", "x.html", "-"},
	} {
		r := runArgs(data, args...)
		require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stdout+r.stderr)
		require.Contains(t, r.stderr, "--", "%v", args)
	}
	in := trtPath(t, "segment")
	before, err := os.ReadFile(in)
	require.NoError(t, err)
	r := runArgs(nil, "--size", in, "--html", in)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stderr, "pteinspect: "), r.stderr)
	after, err := os.ReadFile(in)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// TestSizeData: with --data, --size adds what each method needs from the
// data files, in the human view and in --json; the file's own breakdown
// is unchanged.
func TestSizeData(t *testing.T) {
	prog := externalProgram(t)
	both := writePTD(t, "both.ptd", 1, "w.const", "w.planned")
	alone := runArgs(nil, "--size", "--json", prog)
	require.Equal(t, exitOK, alone.code, alone.stderr)
	require.NotContains(t, alone.stdout, `"external"`)
	r := runArgs(nil, "--size", prog, "--data", both)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "external data the methods need (not in this file):\n  forward: 2 tensors, 32 B from "+both+"\n")
	r = runArgs(nil, "--size", "--json", prog, "--data", both)
	require.Equal(t, exitOK, r.code, r.stderr)
	var doc struct {
		Items    json.RawMessage `json:"items"`
		External []struct {
			Method  string `json:"method"`
			File    string `json:"file"`
			Tensors int    `json:"tensors"`
			Size    int64  `json:"size"`
		} `json:"external"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Len(t, doc.External, 1)
	require.Equal(t, "forward", doc.External[0].Method)
	require.Equal(t, both, doc.External[0].File)
	require.Equal(t, 2, doc.External[0].Tensors)
	require.EqualValues(t, 32, doc.External[0].Size)
	var items struct {
		Items json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(alone.stdout), &items))
	require.JSONEq(t, string(items.Items), string(doc.Items))
	// Without a file that holds them, the tensors are still counted.
	none := writePTD(t, "other.ptd", 1, "unrelated")
	r = runArgs(nil, "--size", prog, "--data", none)
	require.Contains(t, r.stdout, "forward: 2 tensors, 0 B no data file holds them\n")
}

// TestSizePTD: --size of a data file whose two keys share a segment, in
// the human view (testdata/golden/size_ptd.txt, past the file line) and
// as JSON.
func TestSizePTD(t *testing.T) {
	d := &ptd.Data{}
	for i, k := range []string{"w.a", "w.b", "w.shared"} {
		d.NamedData = append(d.NamedData, ptd.NamedData{Key: k, SegmentIndex: uint32(min(i, 1)),
			Layout: &ptd.TensorLayout{ScalarType: pte.ScalarTypeFLOAT, Sizes: []int32{2, 2}, DimOrder: []uint8{0, 1}}})
	}
	for _, n := range []int{40, 16} {
		d.Segments = append(d.Segments, io.NewSectionReader(bytes.NewReader(bytes.Repeat([]byte{7}, n)), 0, int64(n)))
	}
	path := filepath.Join(t.TempDir(), "data.ptd")
	_, err := ptd.WriteFile(path, d)
	require.NoError(t, err)
	r := runArgs(nil, "--size", "--long", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	head, body, ok := strings.Cut(r.stdout, "\n")
	require.True(t, ok)
	require.Equal(t, "file  "+path, head)
	testkit.Golden(t, filepath.Join("testdata", "golden", "size_ptd.txt"), []byte(body))
	r = runArgs(nil, "--size", "--json", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"kind": "ptd"`)
	require.Contains(t, r.stdout, `"users": 2`)
}

// TestSizeRemote: --size of a program over HTTP reads what the summary
// reads (at most 3 requests, under 64 KiB, as many for 2 GiB of engines
// as for 2 MiB) and prints what --size of the local file prints.
func TestSizeRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 2 GiB sparse file")
	}
	dir := t.TempDir()
	names := map[string]int64{"2MiB.pte": 32 << 10, "2GiB.pte": 32 << 20}
	for name, engine := range names {
		testprog.WriteEngines(t, filepath.Join(dir, name), 64, engine)
	}
	srv, cnt := serveDir(t, dir)
	requests := map[string]int64{}
	for name := range names {
		for _, view := range [][]string{nil, {"--json"}} {
			local := runArgs(nil, append([]string{"--size", filepath.Join(dir, name)}, view...)...)
			require.Equal(t, exitOK, local.code, local.stderr)
			cnt.reset()
			url := srv.URL + "/" + name
			remote := runArgs(nil, append([]string{"--size", url}, view...)...)
			require.Equal(t, exitOK, remote.code, remote.stderr)
			require.LessOrEqual(t, cnt.requests.Load(), int64(3), "%s %v", name, view)
			require.Less(t, cnt.bytes.Load(), int64(64<<10), "%s %v", name, view)
			requests[name] = cnt.requests.Load()
			require.Equal(t, strings.Replace(local.stdout, filepath.Join(dir, name), url, 1), remote.stdout)
		}
	}
	require.Equal(t, requests["2MiB.pte"], requests["2GiB.pte"])
}
