package export

import "github.com/ptekit/ptekit/internal/jsontree"

// scanJSON reads a well-formed manifest into an mtree with internal/jsontree,
// in one pass over the bytes. It gives up (false) on anything else, a syntax error, a
// member given twice or nesting past maxManifestDepth, and parseJSON then
// parses with encoding/json's decoder, which reports the error where it is
// and in its own words.
func scanJSON(data []byte) (*mtree, bool) {
	t := newTree(data)
	_, _, err := jsontree.Build[uint32](data, jsontree.Options{MaxDepth: maxManifestDepth, RefuseDuplicates: true}, t)
	return t, err == nil
}
