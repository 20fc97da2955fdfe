// Package envconf parses configuration structs from environment variables
// (caarlos0/env tags) and turns every mistake into one line that names the
// variable: "CACHE_PORT: "abc" is not an integer". It is the one way the
// host and the modules read their settings: Load[T] parses, then calls
// Validate when T has one (Validator); Invalid makes the same kind of
// error for a value that parses but makes no sense. Durations are whole
// seconds unless they carry a unit.
//
// Files:
//   - envconf.go: Env (FromOS), Parse, Load, Validator, Error, Invalid,
//     Secret (variables whose values an error never shows).
//
// Tests: envconf_test.go checks the one-line errors and defaults.
package envconf
