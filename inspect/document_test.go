package inspect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/ptekit/ptekit/delegate"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testkit"
	"github.com/ptekit/ptekit/pte"
)

// openCounting opens the program at path through a byte counter.
func openCounting(t testing.TB, path string) (*pte.File, *testkit.CountingReaderAt) {
	t.Helper()
	cr, size := testkit.OpenCounting(t, path)
	f, err := pte.NewFile(cr, size)
	require.NoError(t, err)
	return f, cr
}

// openShared opens ../shared/<sub>; the test skips or fails (in CI) when
// sub's directory is missing, and fails when the file is.
func openShared(t testing.TB, sub string) *pte.File {
	t.Helper()
	dir, file := filepath.Split(sub)
	f, err := pte.Open(filepath.Join(testkit.SharedDir(t, filepath.Clean(dir)), file))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// backendInit is the part of a pte_cpp_check backend_init event that the
// deployed view must reproduce.
type backendInit struct {
	Method        string `json:"method"`
	ProcessedSize int64  `json:"processed_size"`
	HeadHex       string `json:"processed_head_hex"`
	Parse         struct {
		OK           bool     `json:"ok"`
		EngineOffset uint32   `json:"engine_offset"`
		EngineSize   uint64   `json:"engine_size"`
		Inputs       []string `json:"inputs"`
		Outputs      []string `json:"outputs"`
		NumAliasedIO int      `json:"num_aliased_io"`
		DeviceID     int32    `json:"device_id"`
	} `json:"upstream_trt_blob_parse"`
}

func readBackendInits(t *testing.T, path string) map[string][]backendInit {
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	out := map[string][]backendInit{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"event":"backend_init"`) {
			continue
		}
		var ev backendInit
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		out[ev.Method] = append(out[ev.Method], ev)
	}
	require.NoError(t, sc.Err())
	return out
}

// sameNames reports whether the names of the input (or output) bindings
// are want, in order.
func sameNames(bs []TRTBinding, inputs bool, want []string) bool {
	var got []string
	for _, b := range bs {
		if b.Input() == inputs {
			name, ok := b.Name.(string)
			if !ok {
				return false
			}
			got = append(got, name)
		}
	}
	return slices.Equal(got, want)
}

// TestTensorRTMemberMatchesDeployedRuntime checks, for every TensorRT
// program of vectors/pte, that each delegate's tensorrt.deployed member is
// what the upstream C++ runtime's blob reader yielded when ExecuTorch
// initialised that delegate (NAME.cpp.jsonl), and that there are hazards
// exactly when the strict reading disagrees with it.
func TestTensorRTMemberMatchesDeployedRuntime(t *testing.T) {
	dir := testkit.SharedDir(t, "vectors", "pte")
	files, err := filepath.Glob(filepath.Join(dir, "*.pte"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".pte")
		t.Run(name, func(t *testing.T) {
			f, err := pte.Open(path)
			require.NoError(t, err)
			defer f.Close()
			doc, err := Build(f, nil)
			require.NoError(t, err)
			inits := readBackendInits(t, filepath.Join(dir, name+".cpp.jsonl"))
			seen := map[string]int{}
			for _, d := range doc.Delegates {
				if len(inits[d.Plan]) == 0 {
					// The record shows the runtime never reached this
					// method's backend (a program it refuses earlier).
					continue
				}
				require.NotNil(t, d.TensorRT, "delegate %d of %s", d.DelegateIndex, d.Plan)
				require.Less(t, seen[d.Plan], len(inits[d.Plan]), "more delegates than backend_init events in %s", d.Plan)
				want := inits[d.Plan][seen[d.Plan]]
				seen[d.Plan]++
				trt := d.TensorRT
				require.NotNil(t, d.Size)
				assert.Equal(t, want.ProcessedSize, *d.Size)
				if head := mustHex(t, want.HeadHex); len(head) >= 4 && *d.Size >= delegate.HeaderSize {
					require.NotNil(t, d.Magic)
					assert.Equal(t, latin1(head[:4]), *d.Magic)
				}
				dv := trt.Deployed
				assert.Equal(t, want.Parse.OK, dv.OK)
				if !want.Parse.OK {
					continue
				}
				assert.Equal(t, want.Parse.Inputs, dv.Inputs)
				assert.Equal(t, want.Parse.Outputs, dv.Outputs)
				assert.Equal(t, want.Parse.NumAliasedIO, len(dv.AliasedIO))
				assert.Equal(t, want.Parse.DeviceID, dv.DeviceID)
				if assert.NotNil(t, trt.EngineOffset) && assert.NotNil(t, trt.EngineSize) {
					assert.Equal(t, want.Parse.EngineOffset, *trt.EngineOffset)
					assert.Equal(t, want.Parse.EngineSize, *trt.EngineSize)
				}
				// No hazard exactly when the strict reading agrees with the
				// deployed reader's bindings (as the C++ record has them).
				agree := trt.Metadata != nil && trt.Error == "" && sameNames(trt.Metadata.IOBindings, true, want.Parse.Inputs) &&
					sameNames(trt.Metadata.IOBindings, false, want.Parse.Outputs)
				if agree {
					assert.Empty(t, trt.Hazards)
				} else {
					assert.NotEmpty(t, trt.Hazards, "the readers disagree: %s", trt.Error)
				}
			}
			for m, evs := range inits {
				assert.Equal(t, len(evs), seen[m], "backend_init events of %s", m)
			}
		})
	}
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func TestBuildAliasedIOBlob(t *testing.T) {
	doc, err := Build(openSource(t, "aliased"), nil)
	require.NoError(t, err)
	require.Len(t, doc.Delegates, 1)
	trt := doc.Delegates[0].TensorRT
	require.NotNil(t, trt)
	assert.Equal(t, "TR02", *trt.Magic)
	require.NotNil(t, trt.Metadata)
	assert.Equal(t, []TRTAliasedIO{{Output: "k_out", Input: "k", Kind: "kv_cache_update"}}, trt.Metadata.AliasedIO)
	assert.Equal(t, trt.Metadata.AliasedIO, trt.Deployed.AliasedIO)

	b, err := Marshal(doc)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"sha256"`, "no digests without Options.Hash")
	assert.NotContains(t, string(b), `"error"`, "error is absent for a readable blob")
}

// TestBuildReadsOnlyHeadsOfPayloads: without hashing, the delegates member of
// a program with a 1 MiB engine costs the blob header and metadata, not
// the engine.
func TestBuildReadsOnlyHeadsOfPayloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "large.pte")
	require.NoError(t, os.WriteFile(path, genPrograms(t)["large_engine"], 0o644))
	f, cr := openCounting(t, path)
	opened := cr.Bytes()
	doc, err := Build(f, nil)
	require.NoError(t, err)
	require.Len(t, doc.Delegates, 1)
	assert.Greater(t, *doc.Delegates[0].Size, int64(1<<20), "the payload holds the 1 MiB engine")
	assert.Less(t, cr.Bytes()-opened, int64(2*4096), "Build read %d bytes", cr.Bytes()-opened)

	// One pass hashes the file, its segments and their payloads, keeping
	// the heads of payloads for the delegates: every byte is read once.
	hf, rr := openRecording(t, genPrograms(t)["large_engine"])
	_, err = Build(hf, &Options{Hash: true})
	require.NoError(t, err)
	assert.Equal(t, hf.Size, rr.Bytes(), "Build --hash reads the whole file")
	assertReadOnce(t, "Build --hash", rr, hf.Size)
}

func TestBuildFilters(t *testing.T) {
	f := openSource(t, "two_methods")
	doc, err := Build(f, &Options{Method: "decode"})
	require.NoError(t, err)
	require.Equal(t, 1, doc.Program.NumPlans())
	assert.Equal(t, "decode", doc.Program.Plan(0).Name)
	require.Len(t, doc.Delegates, 1)
	assert.Equal(t, 1, doc.Delegates[0].PlanIndex, "plan_index counts every method")
	assert.Len(t, doc.Segments, len(f.Program.Segments), "the segment table is not narrowed")

	doc, err = Build(f, &Options{Backend: "TensorRTBackend", Method: "prefill"})
	require.NoError(t, err)
	require.Len(t, doc.Delegates, 1)
	assert.Equal(t, "prefill", doc.Delegates[0].Plan)

	// A filter that matches nothing is a mistake, not an empty document.
	_, err = Build(f, &Options{Backend: "XnnpackBackend"})
	assert.True(t, errors.Is(err, ErrNoBackend), "%v", err)
	assert.Contains(t, err.Error(), "(backends: TensorRTBackend)")

	_, err = Build(f, &Options{Method: "nope"})
	assert.True(t, errors.Is(err, ErrNoMethod), "%v", err)
	assert.Contains(t, err.Error(), "prefill, decode")
}

// TestBuildUnreachablePayload: a delegate segment that runs past the end of
// the file (ExecuTorch loads the program, the method fails) has a null
// size, digest and magic, and its segment is not resolvable.
func TestBuildUnreachablePayload(t *testing.T) {
	// A program whose delegate segment has a distinctive size, then that
	// size (the u64 field of its DataSegment table, found by value) grown
	// by 4096, so that the segment runs past the end of the file.
	const size = 0x12345
	data := rewriteBytes(t, genPrograms(t)["segment"], func(p *pte.Program, segs []*io.SectionReader) {
		segs[p.Plan(0).Delegates[0].Processed.Index] = io.NewSectionReader(bytes.NewReader(make([]byte, size)), 0, size)
	})
	src, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	seg := src.Program.Segments[src.Program.Plan(0).Delegates[0].Processed.Index]
	require.EqualValues(t, size, seg.Size)
	// Search after the extended header (bytes 8..40), whose
	// segment_data_size may hold the same value.
	const from = 8 + 32
	field := binary.LittleEndian.AppendUint64(nil, seg.Size)
	i := bytes.Index(data[from:src.Header.ProgramSize], field)
	require.GreaterOrEqual(t, i, 0)
	i += from
	require.Equal(t, -1, bytes.Index(data[i+1:src.Header.ProgramSize], field), "the size is unique in the program")
	binary.LittleEndian.PutUint64(data[i:], seg.Size+4096)
	f, err := pte.NewFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	doc, err := Build(f, &Options{Hash: true})
	require.NoError(t, err)
	require.Len(t, doc.Delegates, 1)
	d := doc.Delegates[0]
	assert.Nil(t, d.Size)
	assert.Nil(t, d.Magic)
	assert.Nil(t, d.TensorRT)
	assert.Equal(t, Digest{Unavailable: true}, d.SHA256)
	assert.False(t, doc.Segments[1].Resolvable)
	assert.True(t, doc.Segments[0].Resolvable)

	// The damage is listed, with where it is and what ExecuTorch returns.
	require.NotEmpty(t, doc.Problems)
	p := doc.Problems[0]
	assert.True(t, p.IsError())
	assert.Equal(t, "segments[1]", p.Path)
	assert.Equal(t, "InvalidArgument", p.Code)
	require.NotNil(t, p.Offset)

	b, err := Marshal(doc)
	require.NoError(t, err)
	var generic struct {
		Delegates []map[string]json.RawMessage `json:"delegates"`
	}
	require.NoError(t, json.Unmarshal(b, &generic))
	for _, k := range []string{"size", "sha256", "magic"} {
		assert.Equal(t, "null", string(generic.Delegates[0][k]), k)
	}
}

func BenchmarkBuildLargeEngine(b *testing.B) {
	f := openSource(b, "large_engine")
	for b.Loop() {
		if _, err := Build(f, nil); err != nil {
			b.Fatal(err)
		}
	}
}
