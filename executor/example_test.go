package executor_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/ptekit/ptekit/executor"
	"github.com/ptekit/ptekit/internal/testprog"
	"github.com/ptekit/ptekit/pte"
)

// openProgram opens one of the test programs of internal/testprog: "chain"
// is a method forward calling two TensorRT engines, with a
// weight_streaming_budget compile spec of 1 MiB on each delegate.
func openProgram(name string) *pte.File {
	progs, err := testprog.Build()
	if err != nil {
		log.Fatal(err)
	}
	f, err := pte.NewFile(bytes.NewReader(progs[name]), int64(len(progs[name])))
	if err != nil {
		log.Fatal(err)
	}
	return f
}

// The load path as a deployment runs it: register the TensorRT backend
// (here over a stand-in engine that states its streamable weight size),
// load the program, then load each method with the load-time backend
// options. Each delegate's weight streaming decision is a Plan.
func Example() {
	f := openProgram("chain")
	gib := int64(1 << 30)
	reg := &executor.Registry{}
	trt := executor.NewTensorRTBackend(executor.StandIn{Streamable: &gib})
	if err := reg.RegisterBackend(executor.TensorRTBackendID, trt); err != nil {
		log.Fatal(err)
	}
	prog, err := executor.Load(f, executor.Config{Registry: reg})
	if err != nil {
		log.Fatal(err)
	}
	id, opt, err := executor.ParseBackendOption("TensorRTBackend:weight_streaming_budget=4096")
	if err != nil {
		log.Fatal(err)
	}
	var lo executor.LoadOptions
	if err := lo.Add(id, opt); err != nil {
		log.Fatal(err)
	}
	for _, name := range prog.MethodNames() {
		m, err := prog.LoadMethod(name, &lo)
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range m.Plans() {
			fmt.Printf("%s delegate %d: %s budget %d applied %d\n", m.Name(), p.Delegate, p.Source, *p.Requested, *p.Applied)
		}
		fmt.Println("kernels the runtime must provide:", m.MissingOperators())
		m.Close()
	}
	// Output:
	// forward delegate 0: load_option budget 4096 applied 4096
	// forward delegate 1: load_option budget 4096 applied 4096
	// kernels the runtime must provide: []
}

// A backend other than TensorRT plugs into the same loader: Init sees the
// delegate and the load-time options addressed to its id.
type cpuBackend struct{}

func (cpuBackend) IsAvailable() bool { return true }
func (cpuBackend) Init(ctx *executor.InitContext, payload *pte.Payload, specs []*pte.CompileSpec) (executor.Handle, error) {
	threads, err := ctx.RuntimeInt("num_threads")
	if err != nil {
		return nil, err
	}
	if threads < 1 {
		return nil, executor.Errorf(executor.CodeInvalidArgument, "num_threads must be at least 1, got %d", threads)
	}
	return threads, nil
}
func (cpuBackend) Destroy(executor.Handle) {}

func ExampleRegistry_RegisterBackend() {
	f := openProgram("segment")
	reg := &executor.Registry{}
	// The program's delegate names TensorRTBackend; this registers a
	// backend of one's own under that id.
	if err := reg.RegisterBackend(executor.TensorRTBackendID, cpuBackend{}); err != nil {
		log.Fatal(err)
	}
	prog, err := executor.Load(f, executor.Config{Registry: reg})
	if err != nil {
		log.Fatal(err)
	}
	var lo executor.LoadOptions
	lo.Add(executor.TensorRTBackendID, executor.Option{Key: "num_threads", Value: executor.Int(0)})
	_, err = prog.LoadMethod("forward", &lo)
	fmt.Println(executor.KindOf(executor.CodeOf(err)))
	fmt.Println(err)
	// Output:
	// invalid_argument
	// runtime: method "forward" delegate 0 (TensorRTBackend): num_threads must be at least 1, got 0 [InvalidArgument]
}

// PlanProgram is what `pteinspect --plan` prints: every method loaded with
// stand-in engines, and the facts nobody stated left open.
func ExamplePlanProgram() {
	f := openProgram("two_methods")
	pp, err := executor.PlanProgram(f, executor.PlanOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range pp.Methods {
		b := m.Delegates[0].Budget
		fmt.Printf("%s ok=%v: %s %d, applied known: %v\n", m.Name, m.OK, b.Source, *b.Requested, b.Applied != nil)
	}
	fmt.Println("assumed:", pp.Assumed)
	// Output:
	// prefill ok=true: compile_spec 1048576, applied known: false
	// decode ok=true: compile_spec 262144, applied known: false
	// assumed: [streamable scratch]
}

// ResolveBudget is the TensorRT delegate's order: a load-time option wins
// over the compile spec, and without either the budget is automatic.
func ExampleResolveBudget() {
	spec := []*pte.CompileSpec{{Key: "weight_streaming_budget", Value: []byte("1048576")}}
	for _, opts := range [][]executor.Option{
		nil,
		{{Key: "weight_streaming_budget", Value: executor.String("2097152")}},
	} {
		res, err := executor.ResolveBudget(opts, spec)
		fmt.Println(res.Source, res.Bytes, err)
	}
	res, _ := executor.ResolveBudget(nil, nil)
	fmt.Println(res.Source, res.Explicit)
	// Output:
	// compile_spec 1048576 <nil>
	// load_option 2097152 <nil>
	// automatic false
}

// ComputeScratchMemory adds up the activation scratch of loaded engines,
// with each engine's own buffer and with one shared buffer per device.
func ExampleComputeScratchMemory() {
	sm := executor.ComputeScratchMemory([]executor.EngineScratch{
		{Device: 0, Bytes: 300, Shared: true},
		{Device: 0, Bytes: 500, Shared: true},
		{Device: 1, Bytes: 200},
	})
	fmt.Println(sm.WithoutPool, sm.WithPool, sm.Current, sm.PoolPerDevice)
	// Output:
	// 1000 700 700 map[0:500]
}
