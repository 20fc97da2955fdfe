// The lock helper: held, refreshed in the background, released; lost and
// reported; two processes contending never overlap, fences increase.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

import { LockHeld, LockLost, Sidecar } from "../dist/index.js";
import { URL_, skip, unique } from "./support.mjs";

test("held, refreshed, released", { skip }, async () => {
  const sc = new Sidecar(URL_);
  const name = unique("ts-lock");
  await sc.withLock(name, { ttl: 1, wait: 0 }, async (lock) => {
    const info = await sc.inspectLock(name);
    assert.deepEqual([info.held, info.fencing_token], [true, lock.fencingToken]);
    // Outlive three TTLs: only the background refresh keeps it.
    for (let i = 0; i < 12; i++) {
      await sleep(250);
      assert.equal((await sc.inspectLock(name)).held, true);
    }
    lock.check();
  });
  assert.deepEqual(await sc.inspectLock(name), { held: false });
});

test("held elsewhere", { skip }, async () => {
  const sc = new Sidecar(URL_);
  const name = unique("ts-lock-held");
  const g = await sc.acquireLock(name, { ttl_ms: 10000 });
  await assert.rejects(
    sc.withLock(name, { ttl: 5, wait: 0.05 }, () => assert.fail("entered a held lock")),
    (e) => e instanceof LockHeld && e.status === 409 && e.code === "lock_held",
  );
  await sc.releaseLock(name, g.token);
});

test("lost: signal aborts, LockLost after the body", { skip }, async () => {
  const sc = new Sidecar(URL_);
  const name = unique("ts-lock-lost");
  await assert.rejects(
    sc.withLock(name, { ttl: 0.3, wait: 0 }, async (lock) => {
      await sc.releaseLock(name, lock.token); // freed behind our back
      await new Promise((resolve) => lock.signal.addEventListener("abort", resolve, { once: true }));
      assert.ok(lock.signal.reason instanceof LockLost);
      assert.throws(() => lock.check(), LockLost);
    }),
    LockLost,
  );
});

test("the body's error wins and the lock is freed", { skip }, async () => {
  const sc = new Sidecar(URL_);
  const name = unique("ts-lock-exc");
  await assert.rejects(sc.withLock(name, { ttl: 5, wait: 0 }, () => { throw new RangeError("x"); }), RangeError);
  assert.deepEqual(await sc.inspectLock(name), { held: false });
});

test("two processes: no overlap, fencing tokens increase", { skip }, async () => {
  const name = unique("ts-lock-procs");
  const dir = mkdtempSync(join(tmpdir(), "ts-lock-"));
  const log = join(dir, "log");
  const worker = fileURLToPath(new URL("./lock_worker.mjs", import.meta.url));
  try {
    const codes = await Promise.all(
      ["a", "b"].map(
        (who) =>
          new Promise((resolve) => {
            const p = spawn(process.execPath, [worker, URL_, name, log, "10", who], { stdio: "inherit" });
            p.on("exit", resolve);
          }),
      ),
    );
    assert.deepEqual(codes, [0, 0]);
    const lines = readFileSync(log, "utf8").trim().split("\n").map((l) => l.split(" "));
    assert.equal(lines.length, 40);
    const fences = [];
    for (let i = 0; i < 40; i += 2) {
      const [enter, exit] = [lines[i], lines[i + 1]];
      assert.deepEqual([enter[0], exit[0]], ["enter", "exit"], `overlap at line ${i}: ${lines.slice(i, i + 2)}`);
      assert.deepEqual(enter.slice(1), exit.slice(1), `overlap at line ${i}`);
      fences.push(Number(enter[1]));
    }
    assert.deepEqual(fences, [...new Set(fences)].sort((a, b) => a - b), `fencing tokens not strictly increasing: ${fences}`);
    assert.deepEqual(new Set(lines.map((l) => l[2])), new Set(["a", "b"]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
