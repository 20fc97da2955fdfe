// Package envconf parses configuration structs from environment variables
// (caarlos0/env tags) and turns every mistake into one line that names the
// variable: "CACHE_PORT: "abc" is not an integer".
package envconf

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Error is a bad value in one environment variable.
type Error struct {
	Var     string
	Problem string
}

func (e *Error) Error() string { return e.Var + ": " + e.Problem }

// Invalid builds the *Error for variable name.
func Invalid(name, format string, args ...any) *Error {
	return &Error{Var: name, Problem: fmt.Sprintf(format, args...)}
}

// Env is an environment as a map, so tests can pass their own instead of
// mutating the process environment.
type Env map[string]string

// FromOS returns the process environment.
func FromOS() Env { return env.ToMap(os.Environ()) }

// Parse fills v (a pointer to a struct with `env` tags) from e. The first bad
// value is returned as an *Error.
func (e Env) Parse(v any) error {
	err := env.ParseWithOptions(v, env.Options{
		Environment: e,
		FuncMap:     map[reflect.Type]env.ParserFunc{reflect.TypeFor[time.Duration](): parseDuration},
	})
	if err == nil {
		return nil
	}
	return describe(v, e, err)
}

// Validator is a configuration that checks its values after parsing (a
// range, a combination); its errors should be *Error values naming the
// variable (see Invalid).
type Validator interface {
	Validate() error
}

// Load is the one way a configuration is read: parse T from e, then run its
// Validate method when T has one. Every mistake names the variable.
func Load[T any](e Env) (T, error) {
	var c T
	if err := e.Parse(&c); err != nil {
		return c, err
	}
	if v, ok := any(&c).(Validator); ok {
		return c, v.Validate()
	}
	return c, nil
}

// parseDuration accepts Go durations ("90s", "1m30s") and, as Cognee's
// *_SECONDS variables do, a bare number of seconds ("90").
func parseDuration(s string) (any, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, errors.New("not a duration")
	}
	return d, nil
}

func describe(v any, e Env, err error) error {
	var agg env.AggregateError
	if errors.As(err, &agg) && len(agg.Errors) > 0 {
		err = agg.Errors[0]
	}
	var pe env.ParseError
	if errors.As(err, &pe) {
		var own *Error // a type's own parser (encoding.TextUnmarshaler) named the variable
		if errors.As(pe.Err, &own) {
			return own
		}
		key := keyOf(reflect.TypeOf(v), pe.Name)
		return &Error{Var: key, Problem: problem(key, e[key], pe.Type)}
	}
	var unset env.VarIsNotSetError
	if errors.As(err, &unset) {
		return &Error{Var: unset.Key, Problem: "must be set"}
	}
	var empty env.EmptyVarError
	if errors.As(err, &empty) {
		return &Error{Var: empty.Key, Problem: "must not be empty"}
	}
	return fmt.Errorf("configuration: %w", err)
}

// problem explains a value that does not parse, without echoing secrets.
func problem(key, value string, t reflect.Type) string {
	shown := strconv.Quote(value)
	if Secret(key) {
		shown = "value"
	}
	switch t.Kind() {
	case reflect.Bool:
		return shown + " is not a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t == reflect.TypeFor[time.Duration]() {
			return shown + ` is not a duration ("60s", "1m30s" or a number of seconds)`
		}
		return shown + " is not an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return shown + " is not a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return shown + " is not a number"
	default:
		return shown + " is not a valid " + t.String()
	}
}

// Secret reports whether a variable holds a secret that must never be logged.
func Secret(key string) bool {
	return strings.Contains(key, "PASSWORD") || strings.Contains(key, "TOKEN")
}

// keyOf finds the env tag of the (possibly nested) field named field.
func keyOf(t reflect.Type, field string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return field
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == field {
			if tag, _, _ := strings.Cut(f.Tag.Get("env"), ","); tag != "" {
				return tag
			}
		}
		if f.Type.Kind() == reflect.Struct {
			if k := keyOf(f.Type, field); k != field {
				return k
			}
		}
	}
	return field
}
