package pte

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"reflect"
	"strings"
)

// DedupPayloads finds byte-identical payloads among srcs, as Write does
// with WriteOptions.Dedup. remap[i] is the position in unique of the
// payload holding the bytes of payload i; unique lists, in order of first
// appearance, the index of one payload per distinct content.
//
// The work is linear in the number of payloads, and most payloads are not
// read at all:
//   - payloads made of the same parts (see Composite) are equal without
//     reading: the same range of the same file (same device and inode,
//     whichever reader with a Stat method, such as *os.File, reads it) or
//     of the same pointer-shaped reader, and in-memory parts (*bytes.Reader,
//     *strings.Reader) of up to 1 MiB with equal bytes;
//   - a payload whose size no other payload has is unique;
//   - the others get a fingerprint, SHA-256 of their first and last
//     fingerprintChunk bytes (of all of them when that is the whole
//     payload); only payloads whose size and fingerprint collide are then
//     hashed whole.
//
// A source that fails or ends early is reported as a *SegmentError.
func DedupPayloads(srcs []*io.SectionReader) (remap, unique []int, err error) {
	if err := checkSources(srcs); err != nil {
		return nil, nil, err
	}
	// same[i] is the first payload identical to payload i.
	same := make([]int, len(srcs))
	for i := range srcs {
		same[i] = i
	}
	byPrint, err := fingerprintPayloads(srcs, same)
	if err != nil {
		return nil, nil, err
	}
	if err := hashCollisions(srcs, byPrint, same); err != nil {
		return nil, nil, err
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

// payloadPrint is a payload's size and fingerprint: payloads with
// different prints differ.
type payloadPrint struct {
	size int64
	sum  [sha256.Size]byte
}

// fingerprintPayloads marks in same the payloads equal by identity (the
// same parts) and groups by print those that share a size with another
// payload and may still be equal; payloads of a size of their own are
// never read.
func fingerprintPayloads(srcs []*io.SectionReader, same []int) (map[payloadPrint][]int, error) {
	bySize := map[int64]int{}
	for _, s := range srcs {
		bySize[s.Size()]++
	}
	// Payloads that share a size are all keyed below: size the maps for
	// them at once (rehashing showed in profiles of 65536 engines).
	shared := 0
	for _, s := range srcs {
		if bySize[s.Size()] > 1 {
			shared++
		}
	}
	byIdentity := make(map[string]int, shared)
	byPrint := make(map[payloadPrint][]int, shared)  // payloads of each fingerprint
	pending := map[int64]int{}                       // first payload of a size, not yet read
	known := make(map[int][sha256.Size]byte, shared) // fingerprints known without reading
	var ids identities
	for i, s := range srcs {
		if bySize[s.Size()] < 2 {
			continue // a size of its own: unique, never read
		}
		parts := sourceParts(s, s.Size())
		if key, ok, exact := ids.key(parts, s.Size()); ok {
			if j, dup := byIdentity[key]; dup {
				same[i] = j
				continue
			}
			byIdentity[key] = i
			if exact && s.Size() <= 2*fingerprintChunk {
				// The fingerprint of a small payload is the hash of
				// its bytes, which its key already holds.
				var sum [sha256.Size]byte
				copy(sum[:], key[len(key)-sha256.Size-len(binary.AppendVarint(nil, s.Size())):])
				known[i] = sum
			}
		}
		// The first payload of a size is read only when another one of
		// that size, not the same by identity, comes; later ones right
		// after their identity, while a file opened for it is still open.
		add := func(i int) error {
			sum, ok := known[i]
			if !ok {
				var err error
				if sum, err = fingerprint(srcs[i]); err != nil {
					return &SegmentError{Index: i, Err: err}
				}
			}
			k := payloadPrint{srcs[i].Size(), sum}
			byPrint[k] = append(byPrint[k], i)
			return nil
		}
		first, seen := pending[s.Size()]
		switch {
		case !seen:
			pending[s.Size()] = i
			continue
		case first >= 0:
			if err := add(first); err != nil {
				return nil, err
			}
			pending[s.Size()] = -1
		}
		if err := add(i); err != nil {
			return nil, err
		}
	}
	return byPrint, nil
}

// hashCollisions marks in same the payloads of each print group that are
// equal: at once when the fingerprint covers every byte, else by hashing
// each payload of the group whole.
func hashCollisions(srcs []*io.SectionReader, byPrint map[payloadPrint][]int, same []int) error {
	for k, group := range byPrint {
		if len(group) < 2 {
			continue
		}
		if k.size <= 2*fingerprintChunk {
			for _, i := range group[1:] {
				same[i] = group[0] // the fingerprint covers every byte
			}
			continue
		}
		first := map[[sha256.Size]byte]int{}
		for _, i := range group {
			h := sha256.New()
			if err := readAll(h, srcs[i], k.size); err != nil {
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
	}
	return nil
}

// fingerprintChunk is how much of each end of a payload its fingerprint
// reads.
const fingerprintChunk = 4 << 10

// fingerprint hashes the first and last fingerprintChunk bytes of src (all
// of it when it is no longer than both).
func fingerprint(src *io.SectionReader) ([sha256.Size]byte, error) {
	n := src.Size()
	var buf [2 * fingerprintChunk]byte
	b := buf[:min(n, 2*fingerprintChunk)]
	head := len(b) // the bytes read from the start; the rest from the end
	if n > 2*fingerprintChunk {
		head = fingerprintChunk
	}
	if err := readFull(src, b[:head], 0, n); err != nil {
		return [sha256.Size]byte{}, err
	}
	if err := readFull(src, b[head:], n-int64(len(b)-head), n); err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// maxMemoryIdentity is the largest in-memory part identified by its bytes.
const maxMemoryIdentity = 1 << 20

// identities builds identity keys of payloads from their parts.
type identities struct {
	files map[uintptr]string // identity of each file reader seen
	buf   []byte
	mem   []byte // in-memory part being hashed
}

// key returns a key that two payloads of n bytes share only when they are
// made of the same parts, and false when a part has no identity (a reader
// that cannot be compared without reading it). Consecutive in-memory parts
// count by the SHA-256 of their bytes together, so exact is set when the
// whole payload is in memory: the key then names its content, and payloads
// with different keys differ.
func (ids *identities) key(parts []*io.SectionReader, n int64) (key string, ok, exact bool) {
	b := binary.AppendVarint(ids.buf[:0], n)
	var run hash.Hash
	var runLen int64
	flush := func() {
		if run != nil {
			b = binary.AppendVarint(run.Sum(append(b, 'm')), runLen)
			run, runLen = nil, 0
		}
	}
	exact = true
	for _, p := range parts {
		ra, off, size := p.Outer()
		switch r := ra.(type) {
		case *bytes.Reader, *strings.Reader:
			// Memory: its bytes are its identity (a TensorRT blob's
			// header, built for each call, is one).
			if runLen+size > maxMemoryIdentity {
				return "", false, false
			}
			if int64(cap(ids.mem)) < size {
				ids.mem = make([]byte, size)
			}
			m := ids.mem[:size]
			if k, _ := ra.ReadAt(m, off); int64(k) != size {
				return "", false, false
			}
			if run == nil {
				run = sha256.New()
			}
			run.Write(m)
			runLen += size
			continue
		case interface{ Stat() (fs.FileInfo, error) }:
			// A file (an *os.File, or one opened on demand that kept the
			// result of stat(2)): its device and inode name it.
			id, ok := ids.file(r)
			if !ok {
				return "", false, false
			}
			flush()
			b = append(append(b, 'f'), id...)
		default:
			v := reflect.ValueOf(ra)
			// Only pointer-shaped readers have an identity: comparing
			// interface values whose dynamic type holds a slice panics.
			if ra == nil || v.Kind() != reflect.Pointer {
				return "", false, false
			}
			flush()
			b = fmt.Appendf(append(b, 'p'), "%s:%x", v.Type(), v.Pointer())
		}
		exact = false
		b = binary.AppendVarint(binary.AppendVarint(b, off), size)
	}
	flush()
	ids.buf = b
	return string(b), true, exact && len(parts) > 0
}

// file returns the identity of the file r reads: its device and inode
// where the system has them, else r itself when it is a pointer.
func (ids *identities) file(r interface{ Stat() (fs.FileInfo, error) }) (string, bool) {
	v := reflect.ValueOf(r)
	if v.Kind() != reflect.Pointer {
		return "", false
	}
	if id, ok := ids.files[v.Pointer()]; ok {
		return id, true
	}
	if ids.files == nil {
		ids.files = map[uintptr]string{}
	}
	var id string
	st, err := r.Stat()
	if err == nil {
		id, err = fileIdentity(st)
	}
	if err != nil {
		id = fmt.Sprintf("%s:%x", v.Type(), v.Pointer())
	}
	ids.files[v.Pointer()] = id
	return id, true
}

// dedupChunk is the read size used when hashing payloads.
const dedupChunk = 256 << 10

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
