package pte

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// ooMaxRead is an io.ReaderAt that records the largest read asked of it.
type ooMaxRead struct {
	r   io.ReaderAt
	max int
}

func (m *ooMaxRead) ReadAt(p []byte, off int64) (int, error) {
	m.max = max(m.max, len(p))
	return m.r.ReadAt(p, off)
}

func TestOpenOptionsMaxProgramSize(t *testing.T) {
	b := vlWrite(t, wrProgram(1), nil, bytes.Repeat([]byte("e"), 5000))
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header == nil {
		t.Fatal("generated program has no extended header")
	}
	region := int64(f.Header.ProgramSize)

	for _, c := range []struct {
		opts *OpenOptions
		ok   bool
	}{
		{nil, true}, {&OpenOptions{}, true}, {&OpenOptions{MaxProgramSize: region}, true},
		{&OpenOptions{MaxProgramSize: 1 << 40}, true}, {&OpenOptions{MaxProgramSize: region - 1}, false},
	} {
		r := &ooMaxRead{r: bytes.NewReader(b)}
		_, err := NewFileWith(r, int64(len(b)), c.opts)
		if c.ok {
			if err != nil {
				t.Errorf("%+v: %v", c.opts, err)
			}
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Code != CodeMemoryAllocation || fe.Path != "extended_header.program_size" {
			t.Errorf("%+v: err = %v, want a MemoryAllocationFailed FormatError at extended_header.program_size", c.opts, err)
		}
		if int64(r.max) >= region {
			t.Errorf("%+v: read %d bytes at once before refusing a %d-byte region", c.opts, r.max, region)
		}
	}

	// OpenWith passes the options on.
	path := filepath.Join(t.TempDir(), "p.pte")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWith(path, &OpenOptions{MaxProgramSize: region - 1}); err == nil {
		t.Error("OpenWith ignored MaxProgramSize")
	}
	g, err := OpenWith(path, &OpenOptions{MaxProgramSize: region})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()

	// Without an extended header the whole file is the region.
	nb := vlWrite(t, wrProgram(0))
	if _, err := NewFileWith(bytes.NewReader(nb), int64(len(nb)), &OpenOptions{MaxProgramSize: int64(len(nb)) - 1}); err == nil {
		t.Error("headerless file over the limit accepted")
	}
	if _, err := NewFileWith(bytes.NewReader(nb), int64(len(nb)), &OpenOptions{MaxProgramSize: int64(len(nb))}); err != nil {
		t.Errorf("headerless file at the limit: %v", err)
	}
}

// TestCheckHead: the head of a program gives the end its header states
// (its whole size for a program with segments and nothing after them);
// a wrong identifier, a .ptd, a .bpte and a region over the limit are
// refused as NewFileWith refuses them; a short head says nothing.
func TestCheckHead(t *testing.T) {
	b := vlWrite(t, wrProgram(1), nil, bytes.Repeat([]byte("e"), 5000))
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	end, err := CheckHead(b[:HeadSize], nil)
	if err != nil || end != int64(len(b)) {
		t.Fatalf("CheckHead = %d, %v; want %d (the file's size)", end, err, len(b))
	}
	if end, err := CheckHead(b[:7], nil); end != -1 || err != nil {
		t.Errorf("7-byte head: %d, %v", end, err)
	}
	withID := func(id string) []byte {
		h := bytes.Clone(b[:HeadSize])
		copy(h[4:8], id)
		return h
	}
	region := int64(f.Header.ProgramSize)
	for _, c := range []struct {
		head []byte
		opts *OpenOptions
	}{
		{make([]byte, HeadSize), nil},
		{withID("FT01"), nil},
		{withID("BP08"), nil},
		{withID("ET11"), nil},
		{b[:HeadSize], &OpenOptions{MaxProgramSize: region - 1}},
	} {
		_, want := NewFileWith(bytes.NewReader(append(bytes.Clone(c.head), b[HeadSize:]...)), int64(len(b)), c.opts)
		_, err := CheckHead(c.head, c.opts)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("head %q: CheckHead %v, NewFileWith %v", c.head[4:8], err, want)
		}
	}
}
