// Package redisstoretest gives each test its own fresh Redis: a real
// redis-server started on a free loopback port when the binary is on PATH,
// else an embedded miniredis. With REQUIRE_REAL_REDIS=1 (as in CI) a missing
// redis-server fails the test instead of falling back. There is no mocked
// Redis anywhere in this project. A real Redis Cluster comes from
// redis-server and redis-cli; Each runs a suite on the real server and
// miniredis, EachWithCluster on a 3-master cluster too, shared per package
// when its TestMain calls Main.
//
// A test skipped for want of a tool would go unnoticed under go test ./...,
// which prints only "ok" for a passing package: every skip is recorded and
// the package prints one notice line naming the skipped tests, into the go
// command's own stderr.
//
// Files:
//   - redisstoretest.go: Server (New, NewReal, NewRealOnPort, NewMini, Each;
//     Kill, Start, Client, Conn, Keys, DBSize), OpenReady, FreePort,
//     RawCommand, StreamEvents (an event stream as the scripts wrote it),
//     Snapshot (keys' types, values and TTLs, for "a refused write changed
//     nothing").
//   - cluster.go: Cluster, a real Redis Cluster on loopback (NewCluster,
//     StartCluster, Kill and Start a node, Server view).
//   - topology.go: CLUSTER NODES (Topology, Masters, MasterOf), WaitOK,
//     Flush, DBSize.
//   - shared.go: Main (TestMain's), NewClusterServer and EachWithCluster on
//     the package's shared cluster, flushed before each test.
//   - setup.go: Setup, the rigs from a TestMain (a testing.TB whose Fatal
//     and Skip come back as an error).
//   - notice.go: Skip and the one notice line per package (to
//     /proc/<ppid>/fd/2, else /dev/tty; stderr under -v).
//   - commandstats.go: CommandCalls and CommandsOf: the Redis commands a
//     piece of work ran (INFO commandstats), for bounded-work tests.
//
// Tests: cluster_test.go starts a 3-master cluster, writes across it and
// flushes it; setup_test.go Setup's start, stop and errors; notice_test.go
// runs the real go test into a pipe and checks the notice line.
package redisstoretest
