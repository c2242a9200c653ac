package compilespec

import (
	"fmt"
	"github.com/ptekit/ptekit/internal/quote"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Device type names as ExecuTorch's schema.DeviceType spells them, lower
// case, as returned by ParseTargetDevice.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
)

// MaxDeviceIndex is the largest device index a program can carry:
// ExecuTorch's schema stores device indices as a signed byte (int8).
const MaxDeviceIndex = 127

// EncodeTargetDevice returns the target_device value for CUDA device index,
// "cuda:N", as the Torch-TensorRT partitioner writes it. An index outside
// [0, MaxDeviceIndex] is refused with a *TargetDeviceError: it names no CUDA
// device a program can record.
func EncodeTargetDevice(index int) ([]byte, error) {
	v := []byte(DeviceCUDA + ":" + strconv.Itoa(index))
	if err := checkDeviceIndex(v, index); err != nil {
		return nil, err
	}
	return v, nil
}

// checkDeviceIndex refuses an index outside [0, MaxDeviceIndex].
func checkDeviceIndex(v []byte, index int) error {
	if index < 0 || index > MaxDeviceIndex {
		return &TargetDeviceError{Value: v, Reason: fmt.Sprintf(
			"device index %d is outside [0, %d] (ExecuTorch stores it as int8, and CUDA devices are numbered from 0)", index, MaxDeviceIndex)}
	}
	return nil
}

// TargetDeviceError reports a target_device value that ExecuTorch's device
// propagation pass rejects (to_executorch raises ValueError) or that names
// a device index a program cannot carry.
type TargetDeviceError struct {
	Value  []byte // the value as given
	Reason string // what is wrong, in lower case
}

// Error implements error.
func (e *TargetDeviceError) Error() string {
	return fmt.Sprintf(`compilespec: invalid target_device %s: %s (want "cuda:N" or "cpu")`,
		quote.Bytes(e.Value), e.Reason)
}

// ParseTargetDevice reads a target_device value the way ExecuTorch's
// PropagateDevicePass does: decode as UTF-8 (invalid UTF-8 is an error),
// strip surrounding whitespace, lower-case, split at the first ':', read the
// part after it as an integer (Python int(): optional sign, surrounding
// whitespace and single underscores between digits allowed), and require
// the part before it to name a schema DeviceType ("cpu" or "cuda"). A value
// without ':' means index 0, as in the pass (it has an explicit branch for
// that). deviceType is DeviceCPU or DeviceCUDA.
//
// The index must also lie in [0, MaxDeviceIndex]: the pass would write a
// larger one into the program's int8 device_index field, which fails, and a
// negative one names no device. Python's int() also accepts non-ASCII
// decimal digits; this function does not, and reports them as an error.
func ParseTargetDevice(v []byte) (deviceType string, index int, err error) {
	fail := func(reason string) (string, int, error) {
		return "", 0, &TargetDeviceError{Value: v, Reason: reason}
	}
	if !utf8.Valid(v) {
		return fail("not valid UTF-8")
	}
	s := strings.ToLower(strings.TrimFunc(string(v), isPySpace))
	typ, idx, hasIdx := strings.Cut(s, ":")
	switch typ {
	case DeviceCPU, DeviceCUDA:
	default:
		return fail(fmt.Sprintf("unknown device type %s", quote.String(typ)))
	}
	if !hasIdx {
		return typ, 0, nil
	}
	n, ok := parsePyInt(idx)
	if !ok {
		return fail(fmt.Sprintf("device index %s is not an integer", quote.String(idx)))
	}
	if err := checkDeviceIndex(v, n); err != nil {
		return "", 0, err
	}
	return typ, n, nil
}

// parsePyInt reads s like Python's int(s) for ASCII input that fits in an
// int: surrounding whitespace, one optional sign, digits with single
// underscores between them.
func parsePyInt(s string) (int, bool) {
	s = strings.TrimFunc(s, isPySpace)
	if s == "" {
		return 0, false
	}
	sign := ""
	if s[0] == '+' || s[0] == '-' {
		sign, s = s[:1], s[1:]
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false
	}
	s = strings.ReplaceAll(s, "_", "")
	if strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(sign + s)
	return n, err == nil
}

// isPySpace reports whether r is whitespace for Python's str.strip().
func isPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0,
		0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// DeviceMismatchError reports that a pinned target_device disagrees with the
// device the TensorRT engine runs on (the blob's device_id). ExecuTorch then
// places the delegate's inputs and outputs on one device while the engine
// runs on another.
//
// The device id has three Go types across ptekit, each the width of the
// place it comes from: the blob's JSON metadata holds an integer of any size
// (delegate.Metadata.DeviceID is an int64), the deployed C++ reader keeps a
// C++ int (delegate.DeployedView.DeviceID is an int32), and a target_device
// index is a small int8 held here in an int. BlobDeviceID takes the widest
// reading converted by the caller; any value outside [0, MaxDeviceIndex]
// simply never matches.
type DeviceMismatchError struct {
	Pinned       []byte // the target_device value
	DeviceType   string // as parsed from Pinned
	Index        int    // as parsed from Pinned
	BlobDeviceID int    // the device_id in the TensorRT blob
}

// Error implements error.
func (e *DeviceMismatchError) Error() string {
	return fmt.Sprintf("compilespec: target_device %s places delegate I/O on %s:%d but the TensorRT engine runs on cuda:%d (blob device_id)",
		quote.Bytes(e.Pinned), e.DeviceType, e.Index, e.BlobDeviceID)
}

// CheckTargetDevice reports whether a pinned target_device value agrees with
// the blob's device_id: it returns nil when pinned reads as cuda:blobDeviceID,
// a *TargetDeviceError when pinned is malformed, and a *DeviceMismatchError
// when it names another device (including "cpu").
func CheckTargetDevice(pinned []byte, blobDeviceID int) error {
	typ, idx, err := ParseTargetDevice(pinned)
	if err != nil {
		return err
	}
	if typ != DeviceCUDA || idx != blobDeviceID {
		return &DeviceMismatchError{Pinned: pinned, DeviceType: typ, Index: idx, BlobDeviceID: blobDeviceID}
	}
	return nil
}
