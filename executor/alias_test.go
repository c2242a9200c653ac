package executor

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ptekit/ptekit/delegate"
)

// describedEngine is a fakeEngine that also describes its I/O tensors
// (EngineTensors).
type describedEngine struct {
	*fakeEngine
	aliases      map[string]string
	shapes       map[string][]int64
	shapeTensors []string
}

func (e describedEngine) AliasedInputTensor(out string) string { return e.aliases[out] }
func (e describedEngine) TensorShape(name string) []int64      { return e.shapes[name] }
func (e describedEngine) IsShapeTensor(name string) bool {
	return slices.Contains(e.shapeTensors, name)
}

// describedFactory wraps fakeFactory's engines in describedEngine.
type describedFactory struct {
	fakeFactory
	tmpl describedEngine
}

func (f *describedFactory) Deserialize(device int, r *io.SectionReader) (Engine, error) {
	e, err := f.fakeFactory.Deserialize(device, r)
	if err != nil {
		return nil, err
	}
	d := f.tmpl
	d.fakeEngine = e.(*fakeEngine)
	return d, nil
}

// TestTensorRTInitAliasedIO covers init steps 10 and 11: aliased_io names
// and kinds always, and with an engine that describes its tensors the
// agreement of each pair with the engine and the shape-tensor refusal.
func TestTensorRTInitAliasedIO(t *testing.T) {
	kv := func(out, in, kind string) *delegate.Metadata {
		m := seedMetadata()
		m.AliasedIO = []delegate.AliasedIO{{Output: out, Input: in, Kind: kind}}
		return m
	}
	agree := describedEngine{aliases: map[string]string{"cache_out": "cache"},
		shapes: map[string][]int64{"cache": {1, 8}, "cache_out": {1, 8}}}
	tests := []struct {
		name    string
		meta    *delegate.Metadata
		engine  *describedEngine // nil: a fake engine that does not describe its tensors
		errSub  string
		noteSub string
	}{
		{name: "kv alias, plain engine", meta: seedMetadata(), noteSub: "their agreement with the engine is not"},
		{name: "kv alias, engine agrees", meta: seedMetadata(), engine: &agree},
		{name: "user alias, same shapes", meta: kv("cache_out", "cache", delegate.KindUser), engine: &agree},
		{name: "output name unknown", meta: kv("nope", "cache", delegate.KindKVCacheUpdate), errSub: `aliased_io names not found (output="nope", input="cache")`},
		{name: "input name is an output", meta: kv("cache_out", "y", delegate.KindKVCacheUpdate), errSub: `aliased_io names not found (output="cache_out", input="y")`},
		{name: "unknown kind", meta: kv("cache_out", "cache", "weird"), errSub: `unknown kind "weird"`},
		{name: "kv alias disagrees", meta: kv("cache_out", "x", delegate.KindKVCacheUpdate), engine: &agree,
			errSub: `kv_cache_update alias for output "cache_out" disagrees with the engine (engine aliases "cache", blob says "x")`},
		{name: "user alias shape mismatch", meta: kv("y", "x", delegate.KindUser),
			engine: &describedEngine{shapes: map[string][]int64{"x": {2}, "y": {3}}}, errSub: `user alias output "y" shape [3] is incompatible with input "x" shape [2]`},
		{name: "shape tensor input", meta: seedMetadata(),
			engine: &describedEngine{aliases: agree.aliases, shapeTensors: []string{"x"}}, errSub: `shape tensor input "x" is not supported`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := openBytes(t, writeProgram(t, seedProgram(t, tc.meta), tc.meta))
			var fac EngineFactory
			var engines func() []*fakeEngine
			if tc.engine != nil {
				df := &describedFactory{fakeFactory: fakeFactory{template: fakeEngine{streamable: gib}}, tmpl: *tc.engine}
				fac, engines = df, func() []*fakeEngine { return df.engines }
			} else {
				ff := &fakeFactory{template: fakeEngine{streamable: gib}}
				fac, engines = ff, func() []*fakeEngine { return ff.engines }
			}
			reg := &Registry{}
			reg.RegisterBackend(TensorRTBackendID, NewTensorRTBackend(fac))
			prog, err := Load(f, Config{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			m, err := prog.LoadMethod("forward", nil)
			if tc.errSub != "" {
				var re *Error
				if !errors.As(err, &re) || re.Code != CodeInvalidProgram || re.Delegate != 0 || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error = %v; want InvalidProgram containing %q", err, tc.errSub)
				}
				if len(re.Plans) != 1 || !strings.Contains(strings.Join(re.Plans[0].Notes, "\n"), tc.errSub) {
					t.Errorf("plan of the failed init: %+v", re.Plans)
				}
				for _, e := range engines() {
					if !e.closed || len(e.contexts) != 1 || !e.contexts[0].closed {
						t.Errorf("engine or context leaked")
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			notes := strings.Join(m.Plans()[0].Notes, "\n")
			if tc.noteSub != "" && !strings.Contains(notes, tc.noteSub) || tc.noteSub == "" && notes != "" {
				t.Errorf("notes %q, want %q", notes, tc.noteSub)
			}
		})
	}
}

// TestTensorRTInitAliasedNoBindings: a blob that names no bindings has its
// aliased_io checked upstream against names inferred from the engine, which
// no Engine here reports, so the outcome is unknown, not a refusal.
func TestTensorRTInitAliasedNoBindings(t *testing.T) {
	m := &delegate.Metadata{AliasedIO: []delegate.AliasedIO{{Output: "cache_out", Input: "cache", Kind: delegate.KindKVCacheUpdate}}}
	f := openBytes(t, writeProgram(t, seedProgram(t, m), m))
	reg := &Registry{}
	reg.RegisterBackend(TensorRTBackendID, NewTensorRTBackend(&fakeFactory{}))
	prog, err := Load(f, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	_, err = prog.LoadMethod("forward", nil)
	if CodeOf(err) != CodeNotSupported || !errors.Is(err, ErrOutcomeUnknown) || !strings.Contains(err.Error(), "names no bindings") {
		t.Errorf("LoadMethod = %v; want NotSupported with ErrOutcomeUnknown", err)
	}
	pp, err := PlanProgram(f, PlanOptions{})
	if err != nil || pp.Methods[0].OK || pp.Methods[0].Error == nil || !pp.Methods[0].Error.Unknown {
		t.Errorf("plan = %+v, %v; want an unknown outcome", pp.Methods, err)
	}
}
