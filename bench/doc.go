// Package bench holds the benchmarks run by hand: programs and scripts that
// measure the real binary and a private redis-server on loopback, whose
// results, with their exact commands, are in BENCHMARKS.md. It has no Go
// code of its own: the Go programs are its subfolders, and the in-process
// benchmarks live beside the code they measure (go test -bench). The Python
// scripts need Debian's /usr/bin/python3 with python3-redis; the instruction
// counts need valgrind. Each script's header says how to run it.
//
// Files:
//   - appendcost/: Redis CPU per entry append, the sidecar's against
//     Cognee's RPUSH+EXPIRE.
//   - pinglatency/: what another client's PING waits during big message
//     appends and a cold relevance search's catch-up, and the SLOWLOG.
//   - rig/: what the Go tools share: a redis-server and the sidecar binary
//     on free loopback ports, a plain RESP connection.
//   - libraries/: writes the Redis Functions libraries as the sidecar loads
//     them, and each stock script as EVAL runs it, for the scripts below.
//   - slowuploads/: whether slow uploads lock new clients out of a running
//     sidecar.
//   - sessions_load.sh: the sessions load targets on loopback:
//     redis-benchmark RPUSH, wrk appends, Cognee's RPUSH+EXPIRE, feedback
//     both ways; SCRIPT_PATH=evalsha for an ACL user refused FCALL.
//   - sessions_append.lua, sessions_feedback.lua: the wrk scripts of
//     sessions_load.sh (unique-qa_id appends; random-target feedback).
//   - benchlib.py: what the Python tools share: a free port, waiting for
//     Redis and for the sidecar, pipelined calls.
//   - sessions_cognee.py: Cognee's own paths with redis-py, and a Python
//     HTTP client of the sidecar, for sessions_load.sh.
//   - sessions_lua_cost.py: Redis's time per append and feedback script
//     (INFO commandstats), EVALSHA and FCALL; helpers the others import.
//   - sessions_lua_instructions.py: instructions per append and feedback
//     inside FCALL under callgrind, load-independent, for A/B of two trees.
//   - sessions_lua_ab.py: append and feedback time with this tree's scripts
//     against another tree's, or EVALSHA against FCALL, alternating.
//   - messages_append_cost.py: a 1 000-message append's instructions and
//     SLOWLOG time (MESSAGES=, TRANSACTION=1).
//   - append_cost.py, answers_rss.py: against a running sidecar, an append's
//     Redis time at the framework sizes; peak RSS of 8 parallel large reads.
//   - big_session.py: the binary on 20 000 and 100 000-entry Cognee
//     sessions: largest SLOWLOG entry per call, peak RSS.
//   - memory_per_session.py: Redis memory per session against Cognee's plain
//     list, by events and search setting.
//   - erase_fence_ab.py: an append's Redis time with the erasure fence
//     against another tree.
package bench
