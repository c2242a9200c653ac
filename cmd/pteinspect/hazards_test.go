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
	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
	"github.com/ptekit/ptekit/pte/ptejson"
)

// withBlob returns vectors/pte/trt_segment.pte with its TensorRT payload
// replaced by the blob of vectors/trt-blob-read/NAME.blob, as file bytes.
func withBlob(t *testing.T, name string) []byte {
	t.Helper()
	blob, err := os.ReadFile(filepath.Join(testkit.SharedDir(t, "vectors", "trt-blob-read"), name+".blob"))
	require.NoError(t, err)
	return withBlobBytes(t, blob)
}

// withMetadata is withBlob for a blob holding m (written as upstream's
// writer would) and a small engine.
func withMetadata(t *testing.T, m *delegate.Metadata) []byte {
	t.Helper()
	engine := bytes.Repeat([]byte{0xee}, 48)
	var blob bytes.Buffer
	_, err := (&delegate.EncodeOptions{UpstreamCompatible: true}).Encode(&blob, m, bytes.NewReader(engine), int64(len(engine)))
	require.NoError(t, err)
	return withBlobBytes(t, blob.Bytes())
}

// withBlobBytes returns vectors/pte/trt_segment.pte with its TensorRT
// payload replaced by blob, as file bytes.
func withBlobBytes(t *testing.T, blob []byte) []byte {
	t.Helper()
	f, err := pte.Open(filepath.Join(testkit.SharedDir(t, "vectors", "pte"), "trt_segment.pte"))
	require.NoError(t, err)
	defer f.Close()
	segs, err := f.SegmentReaders()
	require.NoError(t, err)
	segs[f.Program.ExecutionPlan[0].Delegates[0].Processed.Index] = io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob)))
	var out bytes.Buffer
	_, err = pte.Write(&out, f.Program, segs, nil)
	require.NoError(t, err)
	return out.Bytes()
}

// TestTensorRTHazards puts blobs that the two upstream readers read
// differently into a program and checks every view reports it.
func TestTensorRTHazards(t *testing.T) {
	cases := []struct {
		blob          string
		deployedOK    bool
		metadataValid bool
	}{
		{"diff_binding_empty_name", true, true},              // the C++ reader drops the binding
		{"diff_aliased_output_named_device_id", false, true}, // the C++ reader rejects a valid blob
		{"diff_trailing_garbage_after_json", true, false},    // the C++ reader accepts an invalid blob
		{"hdr_bad_magic_XXXX", false, false},                 // both reject
	}
	for _, c := range cases {
		t.Run(c.blob, func(t *testing.T) {
			data := withBlob(t, c.blob)

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
				Problems []ptejson.Problem `json:"problems"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
			trt := doc.Delegates[0].TensorRT
			assert.Equal(t, c.deployedOK, trt.Deployed.OK)
			assert.Equal(t, c.metadataValid, string(trt.Metadata) != "null")
			assert.Equal(t, c.metadataValid, trt.Error == nil)
			bothReject := !c.deployedOK && !c.metadataValid
			require.NotEmpty(t, trt.Hazards)
			if bothReject {
				assert.Contains(t, strings.Join(trt.Hazards, "\n"), "the deployed C++ reader rejects this blob")
			}
			require.NotEmpty(t, doc.Problems)
			assert.Equal(t, "error", doc.Problems[0].Severity)
			assert.Equal(t, "execution_plan[0].delegates[0] (TensorRT blob)", doc.Problems[0].Path)

			r = runArgs(data, "-")
			require.Equal(t, exitFail, r.code)
			assert.Contains(t, r.stdout, "HAZARD: ")
			if bothReject {
				assert.Contains(t, r.stdout, "UNREADABLE")
				assert.Contains(t, r.stdout, "REJECTS")
			}
			assert.Contains(t, r.stdout, "\nproblems: 1 error(s)")

			r = runArgs(data, "--verify", "-")
			assert.Equal(t, 1, r.code, r.stdout)
			assert.Contains(t, r.stdout, "(TensorRT blob)")
		})
	}

	// The golden human view of one of them.
	r := runArgs(withBlob(t, "diff_binding_empty_name"), "-")
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
