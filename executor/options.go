package executor

import (
	"fmt"
	"github.com/ptekit/ptekit/compilespec"
	"github.com/ptekit/ptekit/internal/quote"
	"strconv"
	"strings"
)

// Limits of ExecuTorch's backend option model (runtime/backend/options.h and
// backend_options_map.h).
const (
	// MaxOptionKeyLen is the longest option key: keys live in a 64-byte C
	// string buffer.
	MaxOptionKeyLen = 63
	// MaxOptionStringLen is the longest string option value, the one limit
	// compilespec.MaxOptionStringLen states. ExecuTorch truncates longer
	// strings silently; this package refuses them.
	MaxOptionStringLen = compilespec.MaxOptionStringLen
	// MaxBackendIDLen is the longest backend id a LoadOptions entry may
	// address.
	MaxBackendIDLen = 63
	// MaxOptionBackends is how many backends one LoadOptions may address.
	MaxOptionBackends = 8
)

// OptionKind is the type of an option value: ExecuTorch options hold a bool,
// a 32-bit int or a string.
type OptionKind uint8

// Option kinds.
const (
	OptionBool OptionKind = iota + 1
	OptionInt
	OptionString
)

// String returns the kind's name as the upstream vectors spell it: "bool",
// "int" or "string".
func (k OptionKind) String() string {
	if k >= OptionBool && k <= OptionString {
		return [...]string{OptionBool: "bool", OptionInt: "int", OptionString: "string"}[k]
	}
	return "OptionKind(" + strconv.Itoa(int(k)) + ")"
}

// OptionValue is a bool, int32 or string option value. The zero value is
// invalid; build values with Bool, Int and String.
type OptionValue struct {
	kind OptionKind
	b    bool
	i    int32
	s    string
}

// Bool returns a bool option value.
func Bool(v bool) OptionValue { return OptionValue{kind: OptionBool, b: v} }

// Int returns a 32-bit int option value.
func Int(v int32) OptionValue { return OptionValue{kind: OptionInt, i: v} }

// String returns a string option value. Strings longer than
// MaxOptionStringLen bytes or containing a NUL byte are refused when the
// option is added to a LoadOptions.
func String(v string) OptionValue { return OptionValue{kind: OptionString, s: v} }

// Kind returns the value's type (0 for the zero OptionValue).
func (v OptionValue) Kind() OptionKind { return v.kind }

// Bool returns the value and whether it is a bool.
func (v OptionValue) Bool() (bool, bool) { return v.b, v.kind == OptionBool }

// Int returns the value and whether it is an int.
func (v OptionValue) Int() (int32, bool) { return v.i, v.kind == OptionInt }

// Str returns the value and whether it is a string.
func (v OptionValue) Str() (string, bool) { return v.s, v.kind == OptionString }

// String formats the value for messages: true, 4096 or "2048".
func (v OptionValue) String() string {
	switch v.kind {
	case OptionBool:
		return strconv.FormatBool(v.b)
	case OptionInt:
		return strconv.Itoa(int(v.i))
	case OptionString:
		return quote.String(v.s)
	}
	return "<invalid>"
}

// Option is one key/value backend option.
type Option struct {
	// Key is the option name, such as "weight_streaming_budget".
	Key string
	// Value is the option value: a bool, an int or a string.
	Value OptionValue
}

// String formats the option as KEY=VALUE.
func (o Option) String() string { return o.Key + "=" + o.Value.String() }

// CheckOption reports whether o can be handed to a backend: a key of 1 to
// MaxOptionKeyLen bytes without NUL, and a valid value (strings of at most
// MaxOptionStringLen bytes without NUL). Errors are *Error with code
// InvalidArgument.
func CheckOption(o Option) error {
	switch {
	case o.Key == "":
		return errorf(CodeInvalidArgument, "option key is empty")
	case len(o.Key) > MaxOptionKeyLen:
		return errorf(CodeInvalidArgument, "option key %s is %d bytes long; at most %d are allowed", quote.String(o.Key), len(o.Key), MaxOptionKeyLen)
	case strings.IndexByte(o.Key, 0) >= 0:
		return errorf(CodeInvalidArgument, "option key %s contains a NUL byte", quote.String(o.Key))
	}
	switch o.Value.kind {
	case OptionBool, OptionInt:
	case OptionString:
		if len(o.Value.s) > MaxOptionStringLen {
			return errorf(CodeInvalidArgument, "option %s: string value is %d bytes long; at most %d are allowed (ExecuTorch would truncate it)",
				o.Key, len(o.Value.s), MaxOptionStringLen)
		}
		if strings.IndexByte(o.Value.s, 0) >= 0 {
			return errorf(CodeInvalidArgument, "option %s: string value contains a NUL byte (ExecuTorch would cut it there)", o.Key)
		}
	default:
		return errorf(CodeInvalidArgument, "option %s has no value", o.Key)
	}
	return nil
}

// LookupOption returns the value of the first option with the given key, as
// ExecuTorch's BackendInitContext::get_runtime_spec does (first match wins).
func LookupOption(opts []Option, key string) (OptionValue, bool) {
	for _, o := range opts {
		if o.Key == key {
			return o.Value, true
		}
	}
	return OptionValue{}, false
}

// LoadOptions holds load-time backend options, per backend id, modelled on
// ExecuTorch's LoadBackendOptionsMap: every delegate of a backend receives
// the same list, there is no per-delegate addressing, and the first option
// with a given key wins. The zero value is empty and ready to use.
type LoadOptions struct {
	opts map[string][]Option
}

// Add appends options for backendID after validating each of them and the
// backend id (1 to MaxBackendIDLen bytes, at most MaxOptionBackends distinct
// ids). Nothing is added when any of them is refused.
func (m *LoadOptions) Add(backendID string, opts ...Option) error {
	switch {
	case backendID == "":
		return errorf(CodeInvalidArgument, "backend id is empty")
	case len(backendID) > MaxBackendIDLen:
		return errorf(CodeInvalidArgument, "backend id %s is %d bytes long; at most %d are allowed", quote.String(backendID), len(backendID), MaxBackendIDLen)
	}
	for _, o := range opts {
		if err := CheckOption(o); err != nil {
			return fmt.Errorf("backend %s: %w", backendID, err)
		}
	}
	if m.opts == nil {
		m.opts = make(map[string][]Option)
	}
	if _, ok := m.opts[backendID]; !ok && len(m.opts) >= MaxOptionBackends {
		return errorf(CodeInvalidArgument, "too many backends in load options: at most %d", MaxOptionBackends)
	}
	m.opts[backendID] = append(m.opts[backendID], opts...)
	return nil
}

// Options returns the options for backendID, in the order they were added
// (nil when none). The result must not be modified.
func (m *LoadOptions) Options(backendID string) []Option {
	if m == nil {
		return nil
	}
	return m.opts[backendID]
}

// ParseOptionValue reads an option value written on a command line:
// "true"/"false" give a bool, a decimal in the int32 range gives an int, and
// anything else (or anything quoted with double quotes, which are removed)
// gives a string. "int:N", "bool:B" and "string:S" force the type.
func ParseOptionValue(s string) (OptionValue, error) {
	if typ, rest, ok := strings.Cut(s, ":"); ok {
		switch typ {
		case "int":
			n, err := strconv.ParseInt(rest, 10, 32)
			if err != nil {
				return OptionValue{}, errorf(CodeInvalidArgument, "option value %s: not a 32-bit int", quote.String(s))
			}
			return Int(int32(n)), nil
		case "bool":
			b, err := strconv.ParseBool(rest)
			if err != nil {
				return OptionValue{}, errorf(CodeInvalidArgument, "option value %s: not a bool", quote.String(s))
			}
			return Bool(b), nil
		case "string":
			return String(rest), nil
		}
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return String(s[1 : len(s)-1]), nil
	}
	if s == "true" || s == "false" {
		return Bool(s == "true"), nil
	}
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		return Int(int32(n)), nil
	}
	return String(s), nil
}

// ParseBackendOption reads BACKEND:KEY=VALUE (the --backend-option form of
// the command-line tools) into a backend id and an option; VALUE is read
// with ParseOptionValue.
func ParseBackendOption(s string) (backendID string, opt Option, err error) {
	id, kv, _ := strings.Cut(s, ":")
	key, val, ok := strings.Cut(kv, "=")
	if !ok || id == "" || key == "" {
		return "", Option{}, errorf(CodeInvalidArgument, "backend option %s: want BACKEND:KEY=VALUE", quote.String(s))
	}
	v, err := ParseOptionValue(val)
	if err != nil {
		return "", Option{}, err
	}
	opt = Option{Key: key, Value: v}
	if err := CheckOption(opt); err != nil {
		return "", Option{}, err
	}
	return id, opt, nil
}
