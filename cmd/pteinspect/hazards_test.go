package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/inspect"
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// withMetadata returns a program whose TensorRT blob holds m (written as upstream's
// writer would) and a small engine.
func withMetadata(t *testing.T, m *delegate.Metadata) []byte {
	t.Helper()
	engine := bytes.Repeat([]byte{0xee}, 48)
	var blob bytes.Buffer
	_, err := (&delegate.EncodeOptions{UpstreamCompatible: true}).Encode(&blob, m, bytes.NewReader(engine), int64(len(engine)))
	require.NoError(t, err)
	return withBlobBytes(t, blob.Bytes())
}

// withBlobBytes returns trtPrograms' "segment" program with its TensorRT
// payload replaced by blob, as file bytes.
func withBlobBytes(t *testing.T, blob []byte) []byte {
	t.Helper()
	data := trtPrograms(t)["segment"]
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	defer f.Close()
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	segs[f.Program.Plan(0).Delegates[0].Processed.Index] = io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob)))
	var out bytes.Buffer
	_, err = pte.Write(&out, f.Program, segs, nil)
	require.NoError(t, err)
	return out.Bytes()
}

// TestTensorRTHazards puts blobs that the two upstream readers read
// differently into a program and checks every view reports it.
func TestTensorRTHazards(t *testing.T) {
	type hazardCase struct {
		blob          string
		data          []byte // the program
		deployedOK    bool
		metadataValid bool
	}
	// A blob the deployed reader reads differently: it drops the binding
	// with the empty name.
	emptyName := withMetadata(t, &delegate.Metadata{IOBindings: []delegate.Binding{{Name: "", IsInput: true}, {Name: "y"}}})
	cases := []hazardCase{{"empty_binding_name", emptyName, true, true}}
	// Every shared blob on which the upstream readers' verdicts differ, or
	// which both reject, as NAME.expect.json says ({"python": {"ok"},
	// "cpp": {"ok"}}).
	dir := testkit.SharedDir(t, "vectors", "trt-blob-read")
	for _, path := range testkit.Glob(t, dir, "*.blob") {
		name := strings.TrimSuffix(filepath.Base(path), ".blob")
		var want struct {
			Python struct {
				OK bool `json:"ok"`
			} `json:"python"`
			CPP struct {
				OK bool `json:"ok"`
			} `json:"cpp"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, name+".expect.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &want), name)
		if want.Python.OK && want.CPP.OK {
			continue // hazards, if any, are in the details
		}
		blob, err := os.ReadFile(path)
		require.NoError(t, err)
		cases = append(cases, hazardCase{name, withBlobBytes(t, blob), want.CPP.OK, want.Python.OK})
	}
	for _, c := range cases {
		t.Run(c.blob, func(t *testing.T) {
			data := c.data

			// Every case is an error at load time: the views are complete
			// and exit 1.
			r := runArgs(data, "--json", "-")
			require.Equal(t, exitFail, r.code, r.stderr)
			var doc struct {
				Delegates []struct {
					TensorRT struct {
						Metadata json.RawMessage `json:"metadata"`
						Error    *string         `json:"error"`
						Deployed struct {
							OK bool `json:"ok"`
						} `json:"deployed"`
						Hazards []string `json:"hazards"`
					} `json:"tensorrt"`
				} `json:"delegates"`
				Problems []inspect.Problem `json:"problems"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
			trt := doc.Delegates[0].TensorRT
			assert.Equal(t, c.deployedOK, trt.Deployed.OK)
			assert.Equal(t, c.metadataValid, string(trt.Metadata) != "null")
			if !c.metadataValid {
				assert.NotNil(t, trt.Error, "what Python rejects ptekit's strict reading rejects")
			}
			bothReject := !c.deployedOK && !c.metadataValid
			require.NotEmpty(t, trt.Hazards)
			if bothReject {
				assert.Contains(t, strings.Join(trt.Hazards, "\n"), "the deployed C++ reader rejects this blob")
			}
			require.NotEmpty(t, doc.Problems)
			assert.Equal(t, "error", doc.Problems[0].Severity)
			assert.Equal(t, "execution_plan[0].delegates[0] (TensorRT blob)", doc.Problems[0].Path)

			r = runArgs(data, "--long", "-")
			require.Equal(t, exitFail, r.code)
			assert.Contains(t, r.stdout, "HAZARD: ")
			if bothReject {
				assert.Contains(t, r.stdout, "UNREADABLE")
				assert.Contains(t, r.stdout, "REJECTS")
			}
			assert.Regexp(t, `\nproblems: [1-9]\d* error\(s\)`, r.stdout)

			r = runArgs(data, "--verify", "-")
			assert.Equal(t, 1, r.code, r.stdout)
			assert.Contains(t, r.stdout, "(TensorRT blob)")
		})
	}

	// The golden human view of one of them.
	r := runArgs(emptyName, "--long", "-")
	testkit.Golden(t, filepath.Join("testdata", "golden", "trt_hazard_empty_name.txt"), []byte(r.stdout))
}

// FuzzRun feeds arbitrary program bytes to every view through standard
// input: any outcome but a panic (or a usage error) is fine, a --json view
// always prints one valid JSON object (the failure object when it has no
// result), and --extract leaves no partial file behind. Seeds:
// testdata/fuzz/FuzzRun (small programs, see TestFuzzRunSeeds) and the
// small files of the shared vectors and corpus.
func FuzzRun(f *testing.F) {
	testkit.AddSharedSeeds(f, maxSeedSize, "vectors/pte/*.pte", "vectors/pte-bad/*.pte", "corpus/*.pte")
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out.bin")
		for _, args := range [][]string{
			{"-"}, {"--json", "--hash", "-"}, {"--verify", "-"}, {"--verify", "--json", "-"},
			{"--compile-specs", "-"}, {"--plan", "-"}, {"--plan", "--json", "-"},
			{"--extract", "0:0", "-o", out, "-"}, {"--extract", "0:0", "--engine", "-o", out, "-"},
		} {
			var stdout, stderr bytes.Buffer
			code := run(args, bytes.NewReader(data), &stdout, &stderr)
			if code == exitUsage && args[0] != "--extract" { // a program without 0:0 is a usage error
				t.Fatalf("%v: usage error on data: %s", args, stderr.String())
			}
			if slices.Contains(args, "--json") && !json.Valid(stdout.Bytes()) {
				t.Fatalf("%v: exit %d without one valid JSON object on stdout: %q", args, code, stdout.String())
			}
			if args[0] == "--extract" {
				entries, _ := os.ReadDir(dir)
				if code != exitOK && len(entries) > 0 {
					t.Fatalf("%v: failed (%d) but left %d file(s)", args, code, len(entries))
				}
				os.Remove(out)
			}
		}
	})
}
