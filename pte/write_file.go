package pte

import (
	"fmt"
	"io"

	"github.com/ptekit/ptekit/internal/atomicfile"
)

// WriteFile writes the program file at path, like Write, through
// internal/atomicfile: path is either untouched or complete, and nothing
// is left behind on error. Because sources are read before the file is put
// in place, path may be the file the payloads come from.
//
// A new file gets mode 0666 less the umask; an existing one keeps its
// permission bits. When path is a symbolic link, the file it points to is
// replaced and the link kept.
func WriteFile(path string, p *Program, segments []*io.SectionReader, opts *WriteOptions) (*WriteInfo, error) {
	// Lay out and encode first: a program that cannot be written creates
	// no file at all.
	// The file is synced at Commit: start its writeback as it is written.
	o := WriteOptions{}
	if opts != nil {
		o = *opts
	}
	o.EarlyWriteback = true
	plan, err := planWrite(p, segments, &o)
	if err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(path, nil)
	if err != nil {
		return nil, fmt.Errorf("pte: %w", err)
	}
	defer f.Abort()
	// The *os.File, so that segments copy with copy_file_range.
	info, err := plan.writeTo(f.OSFile())
	if err != nil {
		return nil, err
	}
	if err := f.Commit(); err != nil {
		return nil, fmt.Errorf("pte: %w", err)
	}
	return info, nil
}
