package pte_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// TestOpenTruncated: a file cut inside its segment data is refused by
// default (as ExecuTorch refuses it); with OpenOptions.Truncated it opens,
// its program whole, the truncation Verify's first error, and the payload
// past the end fails when read (issue 11 item 13). A file cut inside the
// program region is refused either way.
func TestOpenTruncated(t *testing.T) {
	data := testprog.Programs(t)["segment"]
	cut := data[:len(data)-8]
	_, err := pte.NewFile(bytes.NewReader(cut), int64(len(cut)))
	var te *pte.TruncatedError
	require.True(t, errors.As(err, &te), "%v", err)
	var fe *pte.FormatError
	require.True(t, errors.As(err, &fe), "still a *FormatError")

	f, err := pte.NewFileWith(bytes.NewReader(cut), int64(len(cut)), &pte.OpenOptions{Truncated: true})
	require.NoError(t, err)
	require.NotNil(t, f.Truncated)
	assert.Equal(t, "forward", f.Program.Plan(0).Name)
	findings := f.Verify()
	require.NotEmpty(t, findings)
	assert.Contains(t, findings[0].Err.Msg, "truncated")
	assert.Equal(t, pte.SeverityError, findings[0].Severity)
	if pl, err := f.DelegateData(0, 0); err == nil {
		_, err = io.Copy(io.Discard, pl)
		assert.Error(t, err, "the payload past the end")
	}

	whole, err := pte.NewFileWith(bytes.NewReader(data), int64(len(data)), &pte.OpenOptions{Truncated: true})
	require.NoError(t, err)
	assert.Nil(t, whole.Truncated)

	h := f.Header
	require.NotNil(t, h)
	short := data[:h.ProgramSize-1]
	_, err = pte.NewFileWith(bytes.NewReader(short), int64(len(short)), &pte.OpenOptions{Truncated: true})
	assert.Error(t, err, "the program region is not whole")
}
