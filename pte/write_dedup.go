package pte

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"reflect"
)

// dedupe finds byte-identical payloads. remap[i] is the written segment
// holding payload i; unique lists, in order of first appearance, the payload
// that each written segment is copied from.
//
// Only payloads whose size is shared with another are read at all: a pair is
// compared directly (stopping at the first difference), larger groups are
// hashed once each. Sections of the same source at the same offset are
// recognised without reading. A SequentialSource can be read only once, to
// write it, so it is never compared by content.
func dedupe(srcs []*io.SectionReader) (remap, unique []int, err error) {
	bySize := map[int64][]int{}
	seq := make([]bool, len(srcs))
	for i, s := range srcs {
		bySize[s.Size()] = append(bySize[s.Size()], i)
		seq[i] = s.Size() > 0 && isSequential(s)
	}
	// same[i] is the first payload identical to payload i (i itself when
	// none comes before it).
	same := make([]int, len(srcs))
	for i := range same {
		same[i] = i
	}
	for size, group := range bySize {
		if len(group) < 2 {
			continue
		}
		if err := classify(srcs, seq, group, size, same); err != nil {
			return nil, nil, err
		}
	}
	remap = make([]int, len(srcs))
	for i := range srcs {
		if same[i] == i {
			remap[i] = len(unique)
			unique = append(unique, i)
		} else {
			remap[i] = remap[same[i]]
		}
	}
	return remap, unique, nil
}

// classify sets same[i] for the payloads of one size group (indices in
// increasing order); payloads marked seq are not read.
func classify(srcs []*io.SectionReader, seq []bool, group []int, size int64, same []int) error {
	if size == 0 {
		for _, i := range group[1:] {
			same[i] = group[0]
		}
		return nil
	}
	if len(group) == 2 {
		a, b := group[0], group[1]
		eq := sameSection(srcs[a], srcs[b])
		if !eq && !seq[a] && !seq[b] {
			var err error
			if eq, err = equalContent(srcs, a, b, size); err != nil {
				return err
			}
		}
		if eq {
			same[b] = a
		}
		return nil
	}
	first := map[[sha256.Size]byte]int{}
	for _, i := range group {
		// A section already seen needs no hashing.
		found := false
		for _, j := range group {
			if j >= i {
				break
			}
			if same[j] == j && sameSection(srcs[i], srcs[j]) {
				same[i], found = j, true
				break
			}
		}
		if found || seq[i] {
			continue
		}
		h := sha256.New()
		if err := readAll(h, srcs[i], size); err != nil {
			return &SegmentError{Index: i, Err: err}
		}
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		if j, ok := first[sum]; ok {
			same[i] = j
		} else {
			first[sum] = i
		}
	}
	return nil
}

// sameSection reports whether a and b are the same range of the same
// source. Only pointer-shaped sources (*os.File, *bytes.Reader, ...) are
// recognised: comparing two interface values whose dynamic type is, say, a
// struct holding a slice-based reader panics, even though the struct type
// itself reports Comparable. Everything else is compared by content.
func sameSection(a, b *io.SectionReader) bool {
	ra, oa, na := a.Outer()
	rb, ob, nb := b.Outer()
	if oa != ob || na != nb || ra == nil || rb == nil {
		return false
	}
	va, vb := reflect.ValueOf(ra), reflect.ValueOf(rb)
	return va.Type() == vb.Type() && va.Kind() == reflect.Pointer && va.Pointer() == vb.Pointer()
}

// dedupChunk is the read size used when comparing or hashing payloads.
const dedupChunk = 256 << 10

// equalContent compares payloads a and b of the given size.
func equalContent(srcs []*io.SectionReader, a, b int, size int64) (bool, error) {
	ba, bb := make([]byte, min(size, dedupChunk)), make([]byte, min(size, dedupChunk))
	for off := int64(0); off < size; {
		k := min(int64(len(ba)), size-off)
		if err := readFull(srcs[a], ba[:k], off, size); err != nil {
			return false, &SegmentError{Index: a, Err: err}
		}
		if err := readFull(srcs[b], bb[:k], off, size); err != nil {
			return false, &SegmentError{Index: b, Err: err}
		}
		if !bytes.Equal(ba[:k], bb[:k]) {
			return false, nil
		}
		off += k
	}
	return true, nil
}

// readAll writes the first size bytes of src to w.
func readAll(w io.Writer, src *io.SectionReader, size int64) error {
	buf := make([]byte, min(size, dedupChunk))
	for off := int64(0); off < size; {
		k := min(int64(len(buf)), size-off)
		if err := readFull(src, buf[:k], off, size); err != nil {
			return err
		}
		w.Write(buf[:k])
		off += k
	}
	return nil
}

// readFull fills b from src at off; size is the payload size, for the
// message of a short read.
func readFull(src *io.SectionReader, b []byte, off, size int64) error {
	n, err := src.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		return fmt.Errorf("source ended after %d of %d bytes: %w", off+int64(n), size, io.ErrUnexpectedEOF)
	}
	return err
}
