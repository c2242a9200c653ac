package inspect

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countReads is an io.ReaderAt over b that counts the bytes read.
type countReads struct {
	b []byte
	n atomic.Int64
}

func (c *countReads) ReadAt(p []byte, off int64) (int, error) {
	n, err := bytes.NewReader(c.b).ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func sumOf(b []byte) Digest {
	s := sha256.Sum256(b)
	return Digest{Hex: hex.EncodeToString(s[:])}
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// hashPass hashes the spans of rs in one cursor pass.
func hashPass(rs []io.ReaderAt, spans []span) (digests, digests, error) {
	var end int64
	for _, sp := range spans {
		end = max(end, sp.off+sp.n)
	}
	c, err := newCursor(rs, end, spans, nil)
	if err != nil {
		return nil, nil, err
	}
	out, err := c.finish()
	return out[0], out[1], err
}

func TestHashSpansOnePass(t *testing.T) {
	data := randomBytes(3*hashChunk+12345, 1)
	size := int64(len(data))
	spans := []span{{0, size}, {100, 5000}, {100, 5000}, {4000, 2 * hashChunk}, {size - 7, 7}, {50, 0}, {3 * hashChunk, 12345}}
	r := &countReads{b: data}
	got, _, err := hashPass([]io.ReaderAt{r}, spans)
	require.NoError(t, err)
	for _, sp := range spans {
		assert.Equal(t, sumOf(data[sp.off:sp.off+sp.n]), got[sp], "span %v", sp)
	}
	assert.Equal(t, size, r.n.Load(), "every byte read exactly once")

	_, _, err = hashPass([]io.ReaderAt{r}, []span{{size - 10, 20}})
	assert.ErrorContains(t, err, "hashing bytes")
}

func TestHashSpanPair(t *testing.T) {
	a := randomBytes(2*hashChunk+999, 2)
	size := int64(len(a))
	spans := []span{{0, size}, {0, 1000}, {1000, hashChunk}, {1000 + hashChunk, size - 1000 - hashChunk}}
	for _, tc := range []struct {
		name string
		edit func(b []byte)
	}{
		{"identical", func([]byte) {}},
		{"first byte", func(b []byte) { b[0] ^= 1 }},
		{"middle of a span", func(b []byte) { b[1000+hashChunk/2] ^= 0x80 }},
		{"last byte", func(b []byte) { b[len(b)-1]++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(a)
			tc.edit(b)
			ra, rb := &countReads{b: a}, &countReads{b: b}
			da, db, err := hashPass([]io.ReaderAt{ra, rb}, spans)
			require.NoError(t, err)
			for _, sp := range spans {
				assert.Equal(t, sumOf(a[sp.off:sp.off+sp.n]), da[sp], "a %v", sp)
				assert.Equal(t, sumOf(b[sp.off:sp.off+sp.n]), db[sp], "b %v", sp)
			}
			assert.Equal(t, size, ra.n.Load())
			assert.Equal(t, size, rb.n.Load())
		})
	}
}

// TestBuildDiffPairMatchesBuild: the documents of a pair, same layout or
// not, are those Build gives each file alone, and BuildDiffPair reads no
// byte of either twice.
func TestBuildDiffPairMatchesBuild(t *testing.T) {
	progs := genPrograms(t)
	big := progs["large_engine"]
	edited := bytes.Clone(big)
	edited[len(edited)-100] ^= 0xff // a byte of the engine
	for _, pair := range [][2][]byte{{big, big}, {big, edited}, {big, progs["two_methods"]}} {
		fa, ra := openRecording(t, pair[0])
		fb, rb := openRecording(t, pair[1])
		da, db, _, err := BuildDiffPair(fa, fb, nil)
		require.NoError(t, err)
		assertReadOnce(t, "first file", ra, fa.Size)
		assertReadOnce(t, "second file", rb, fb.Size)
		wa, err := Build(fa, &Options{Hash: true})
		require.NoError(t, err)
		wb, err := Build(fb, &Options{Hash: true})
		require.NoError(t, err)
		assert.Equal(t, wa, da)
		assert.Equal(t, wb, db)
	}
}

// TestCursor: a cursor returns each byte it hashes, at the caller's pace,
// reading each once; bytes no span covers are skipped, not read.
func TestCursor(t *testing.T) {
	data := randomBytes(2*hashChunk+77, 3)
	size := int64(len(data))
	spans := []span{{0, 1000}, {3000, size - 3000}, {3000, 10}}
	r := &countReads{b: data}
	c, err := newCursor([]io.ReaderAt{r}, size, spans, nil)
	require.NoError(t, err)
	require.NoError(t, c.skipTo(5000))
	var got []byte
	for c.pos < 5000+hashChunk+10 {
		b, err := c.read(5000 + hashChunk + 10 - c.pos)
		require.NoError(t, err)
		got = append(got, b[0]...)
	}
	assert.Equal(t, data[5000:5000+hashChunk+10], got)
	sums, err := c.finish()
	require.NoError(t, err)
	for _, sp := range spans {
		assert.Equal(t, sumOf(data[sp.off:sp.off+sp.n]), sums[0][sp], "span %v", sp)
	}
	assert.Equal(t, size-2000, r.n.Load(), "the gap 1000..3000 is not read, the rest once")
}
