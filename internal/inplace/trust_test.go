package inplace

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptekit/ptekit/internal/undorecord"
)

// nobody is the uid and gid of the user "nobody", which plants records in
// the tests that run as root.
const nobody = 65534

// TestRecoverRefusesUntrustedRecord: a record that someone other than the
// file's owner (or root, or this user) could have written is refused, and
// the file and the record are left as they are. The record planted is the
// attack of issue 21: old bytes "EVIL", new bytes the file's own, so that
// everything but its provenance checks out.
func TestRecoverRefusesUntrustedRecord(t *testing.T) {
	skipWithoutLeases(t)
	const content = "0123456789"
	rec := undorecord.Encode(10, 0, []byte("EVIL"), []byte("0123"))
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, undo string)
		want  string
	}{
		{"owned by another user", func(t *testing.T, undo string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			require.NoError(t, os.WriteFile(undo, rec, 0o600))
			require.NoError(t, os.Lchown(undo, nobody, nobody))
		}, "owned by uid 65534"},
		{"writable by others", func(t *testing.T, undo string) {
			require.NoError(t, os.WriteFile(undo, rec, 0o600))
			require.NoError(t, os.Chmod(undo, 0o666))
		}, "writable by group or others (mode 0666)"},
		{"writable by group", func(t *testing.T, undo string) {
			require.NoError(t, os.WriteFile(undo, rec, 0o600))
			require.NoError(t, os.Chmod(undo, 0o620))
		}, "writable by group or others"},
		{"symbolic link", func(t *testing.T, undo string) {
			target := filepath.Join(t.TempDir(), "rec")
			require.NoError(t, os.WriteFile(target, rec, 0o600))
			require.NoError(t, os.Symlink(target, undo))
		}, "symbolic link"},
		{"fifo", func(t *testing.T, undo string) {
			require.NoError(t, syscall.Mkfifo(undo, 0o600))
		}, "not a regular file"},
		{"hard link to a file elsewhere", func(t *testing.T, undo string) {
			// Where hard links are not protected, anyone who can write the
			// directory can give another user's file this name.
			other := filepath.Join(t.TempDir(), "rec")
			require.NoError(t, os.WriteFile(other, rec, 0o600))
			require.NoError(t, os.Link(other, undo))
		}, "hard link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newFile(t, []byte(content))
			undo := undorecord.Path(path)
			tc.plant(t, undo)
			before, _ := os.Lstat(undo)
			for _, apply := range []func() error{
				func() error { _, err := Recover(path); return err },
				func() error {
					e, err := Open(path)
					if err == nil {
						e.Close()
					}
					return err
				},
			} {
				err := apply()
				assert.ErrorContains(t, err, tc.want)
				var re *undorecord.Error
				assert.ErrorAs(t, err, &re)
				got, _ := os.ReadFile(path)
				assert.Equal(t, content, string(got), "the file is left alone")
				after, err := os.Lstat(undo)
				require.NoError(t, err, "the record is left alone")
				assert.Equal(t, before.Mode(), after.Mode())
			}
		})
	}
}

// TestRecoverAppliesRecordOfOwner: a record owned by the file's owner is
// applied when another user (root here) recovers it, and a record owned by
// root is applied to a file of another user.
func TestRecoverAppliesRecordOfOwner(t *testing.T) {
	skipWithoutLeases(t)
	if os.Geteuid() != 0 {
		t.Skip("files of another user need root")
	}
	for _, owners := range [][2]int{{nobody, nobody}, {nobody, 0}} {
		path := newFile(t, []byte("EVIL456789"))
		undo := undorecord.Path(path)
		require.NoError(t, os.WriteFile(undo, undorecord.Encode(10, 0, []byte("0123"), []byte("EVIL")), 0o600))
		require.NoError(t, os.Chown(path, owners[0], owners[0]))
		require.NoError(t, os.Lchown(undo, owners[1], owners[1]))
		did, err := Recover(path)
		require.NoError(t, err, "file owner %d, record owner %d", owners[0], owners[1])
		assert.True(t, did)
		got, _ := os.ReadFile(path)
		assert.Equal(t, "0123456789", string(got))
	}
}

// TestRefusesPlantedProgramLink: a program named by a symbolic link that
// another user left in a sticky shared directory is neither edited nor
// recovered through the link (it could point at any file of the user
// running the command); the file it points to stays as it is.
func TestRefusesPlantedProgramLink(t *testing.T) {
	skipWithoutLeases(t)
	if os.Geteuid() != 0 {
		t.Skip("a link of another user needs root")
	}
	target := newFile(t, []byte("EVIL456789"))
	require.NoError(t, os.WriteFile(undorecord.Path(target), undorecord.Encode(10, 0, []byte("0123"), []byte("EVIL")), 0o600))
	shared := filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	require.NoError(t, os.Chmod(shared, os.ModeSticky|0o777))
	link := filepath.Join(shared, "model.pte")
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, os.Lchown(link, nobody, nobody))

	_, err := Recover(link)
	assert.ErrorContains(t, err, "symbolic link owned by uid 65534")
	_, err = Open(link)
	assert.ErrorContains(t, err, "symbolic link owned by uid 65534")
	got, _ := os.ReadFile(target)
	assert.Equal(t, "EVIL456789", string(got))
	assert.FileExists(t, undorecord.Path(target))
}
