// Command sidecar is the session sidecar for AI agents: agent pods call it
// on localhost to keep conversation memory, TTLs and locks in Redis, and it
// tells Prometheus what the agents spend. See README.md.
//
// The product is the list in modules/modules.go; the process (configuration
// → logger → memory limit → Redis → modules → serve, signals, exit codes) is
// sidecar.Main, so main.go is one line: the one os.Exit.
//
// Files:
//   - main.go: os.Exit(sidecar.Main(modules.All())).
//   - modules/: the list of stock modules (its own package).
//
// Tests: the whole product. main_test.go builds the binary (start, shared by
// memory_test.go and security_test.go) and runs it as a user does (bad
// config, SIGTERM with a waiting lock, late or unreachable Redis, idle
// connections not starving the health check); memory_test.go in a 128 MiB
// pod (peak RSS under large appends and reads); kill_test.go a sidecar
// killed mid staged append (the history whole, every key with a TTL, the
// retry landing); security_test.go the token
// on every route, header limits, no secret in logs or answers;
// dockerfile_test.go the Dockerfile's rules and its static, version-stamped
// build. With every module in one host: openapi_test.go and prism_test.go
// hold the OpenAPI document against the routes, their query parameters and
// live answers (also through Stoplight Prism); keyspace_test.go drives every
// route on Redis and a Cluster and checks each key's family, type and TTL;
// functions_test.go replays every script call on FCALL and EVALSHA and
// compares answers and keys; strict_test.go every body's strictness and
// unknown query parameters; wrongtype_test.go reads of wrong-typed keys (409
// key_wrong_type); cost_test.go the Redis commands per write (INFO
// commandstats).
package main
