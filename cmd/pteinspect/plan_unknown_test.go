package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"

	"github.com/ptekit/ptekit/delegate"
	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/pte"
)

// unreadBlob is a TensorRT blob that exists only as its header: it claims
// metadataSize bytes of metadata (zeros) right after the header and an
// empty engine after them.
type unreadBlob struct {
	hdr  [delegate.HeaderSize]byte
	size int64
}

func newUnreadBlob(metadataSize uint32) *unreadBlob {
	b := &unreadBlob{}
	end := (uint64(delegate.HeaderSize) + uint64(metadataSize) + delegate.EngineAlignment - 1) &^ (delegate.EngineAlignment - 1)
	copy(b.hdr[:4], delegate.MagicTR01[:])
	binary.LittleEndian.PutUint32(b.hdr[4:], delegate.HeaderSize)
	binary.LittleEndian.PutUint32(b.hdr[8:], metadataSize)
	binary.LittleEndian.PutUint32(b.hdr[12:], uint32(end))
	b.size = int64(end)
	return b
}

// ReadAt reads the header bytes and zeros after them.
func (b *unreadBlob) ReadAt(p []byte, off int64) (int, error) {
	if off >= b.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.size-off)]
	clear(p)
	if off < int64(len(b.hdr)) {
		copy(p, b.hdr[off:])
	}
	return len(p), nil
}

// unreadProgram writes, sparse, trtPrograms' "segment" program with its
// TensorRT payload replaced by a blob claiming metadataSize bytes of
// metadata, and returns its path.
func unreadProgram(t *testing.T, metadataSize uint32) string {
	t.Helper()
	src, err := pte.Open(trtPath(t, "segment"))
	require.NoError(t, err)
	defer src.Close()
	segs, err := src.SegmentReaders()
	require.NoError(t, err)
	blob := newUnreadBlob(metadataSize)
	segs[src.Program.Plan(0).Delegates[0].Processed.Index] = io.NewSectionReader(blob, 0, blob.size)
	path := filepath.Join(t.TempDir(), "unread.pte")
	out, err := os.Create(path)
	require.NoError(t, err)
	defer out.Close()
	sw := &testprog.SparseWriter{F: out}
	_, err = pte.Write(sw, src.Program, segs, nil)
	require.NoError(t, err)
	require.NoError(t, out.Truncate(sw.Off))
	return path
}

// TestPlanUnknownOutcome: a TensorRT blob whose metadata is larger than
// ptekit reads makes the load outcome unknown. --plan says so, with the
// sizes from the blob's header, and does not claim a failure; --plan --json
// marks the error "unknown"; the exit status is 1 since no plan was made.
// Metadata at the limit is read, and its failure is a known one.
func TestPlanUnknownOutcome(t *testing.T) {
	type planErr struct {
		Kind     string `json:"kind"`
		Delegate *int   `json:"delegate"`
		Unknown  bool   `json:"unknown"`
	}
	type plan struct {
		Methods []struct {
			OK    bool            `json:"ok"`
			Error json.RawMessage `json:"error"`
		} `json:"methods"`
	}
	cases := []struct {
		name         string
		metadataSize uint32
		unknown      bool
	}{
		{"one byte over the limit", delegate.MaxMetadataSize + 1, true},
		{"at the limit", delegate.MaxMetadataSize, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := unreadProgram(t, c.metadataSize)
			h := runArgs(nil, "--plan", path)
			assert.Equal(t, exitFail, h.code, h.stderr)
			j := runArgs(nil, "--plan", "--json", path)
			assert.Equal(t, exitFail, j.code, j.stderr)
			var p plan
			require.NoError(t, json.Unmarshal([]byte(j.stdout), &p), j.stdout)
			require.Len(t, p.Methods, 1)
			assert.False(t, p.Methods[0].OK, "a method not known to load is not ok")
			assert.Equal(t, []string{"delegate", "kind", "message", "unknown"}, keysOf(t, p.Methods[0].Error))
			var e planErr
			require.NoError(t, json.Unmarshal(p.Methods[0].Error, &e))
			assert.Equal(t, c.unknown, e.Unknown)
			require.NotNil(t, e.Delegate)
			assert.Equal(t, 0, *e.Delegate)
			if !c.unknown {
				assert.Equal(t, "invalid_program", e.Kind)
				assert.Contains(t, h.stdout, "method forward: FAILS to load: invalid_program: ")
				assert.NotContains(t, h.stdout, "UNKNOWN")
				return
			}
			assert.Equal(t, "not_supported", e.Kind)
			want := fmt.Sprintf("method forward: load outcome UNKNOWN: ptekit did not read the metadata of delegate 0's TensorRT blob (%d bytes > the 64 MiB it reads)",
				c.metadataSize)
			assert.Contains(t, h.stdout, want)
			assert.Contains(t, h.stdout, "not known to fail")
			assert.NotContains(t, h.stdout, "FAILS")
		})
	}
}

// TestUnknownReasonFallback: when the blob header does not explain the
// unknown outcome, the line carries the load error's message, still
// without claiming a failure.
func TestUnknownReasonFallback(t *testing.T) {
	f, err := pte.Open(trtPath(t, "segment"))
	require.NoError(t, err)
	defer f.Close()
	zero, nine := 0, 9
	for _, m := range []executor.MethodPlan{
		{Name: "forward", Error: &executor.PlanError{Kind: "not_supported", Message: "not read\nby ptekit", Unknown: true}},
		{Name: "forward", Error: &executor.PlanError{Kind: "not_supported", Message: "not read\nby ptekit", Delegate: &nine, Unknown: true}},
		{Name: "nope", Error: &executor.PlanError{Kind: "not_supported", Message: "not read\nby ptekit", Delegate: &zero, Unknown: true}},
		// The delegate's blob is read, and its metadata is not too large.
		{Name: "forward", Error: &executor.PlanError{Kind: "not_supported", Message: "not read\nby ptekit", Delegate: &zero, Unknown: true}},
	} {
		got := unknownReason(f, &m)
		assert.Contains(t, got, "cannot tell whether the method loads")
		assert.True(t, strings.HasSuffix(got, ": not read by ptekit"), "%q", got)
	}
}
